"""The built-in engine trains ONE run across a `jax.distributed` job (2 processes x 4 CPU devices).

Real processes of `python -m training mnist` joined by JAX's coordinator on localhost (the
JAX_COORDINATOR_ADDRESS / JAX_NUM_PROCESSES / JAX_PROCESS_ID variables), gloo CPU collectives,
real Fashion-MNIST, TensorBoard's own event reader. Compared with 1 process x 8 devices on the
same global batch.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from runstore import run_folder

ROOT = Path(__file__).resolve().parents[1]
ARGS = ["--epochs", "1", "--batch-size", "32", "--train-limit", "512", "--test-limit", "200", "--log-every", "4"]


def _port() -> int:
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


def _start(root: Path, fashion: Path, processes: int, devices: int, args: list[str]) -> list[subprocess.Popen]:
    """The CLI in `processes` processes of `devices` forced CPU devices each."""
    port, procs = _port(), []
    for i in range(processes):
        env = {**os.environ, "XLA_FLAGS": f"--xla_force_host_platform_device_count={devices}"}
        env.update(WANDB_MODE="offline", WANDB_SILENT="true", JAX_PLATFORMS="cpu")
        if processes > 1:
            env.update(JAX_COORDINATOR_ADDRESS=f"localhost:{port}", JAX_NUM_PROCESSES=str(processes))
            env["JAX_PROCESS_ID"] = str(i)
        cmd = [sys.executable, "-m", "training", "mnist", "--dataset", "fashion_mnist", "--data-dir", str(fashion)]
        cmd += ["--devices", "0", "--runs-root", str(root), "--quiet", "--wandb", "disabled", *args]
        procs.append(
            subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        )
    return procs


def _ends(procs: list[subprocess.Popen]) -> list[dict]:
    """Each process's final JSON line, once it exited 0."""
    outs = []
    for p in procs:
        try:
            out, err = p.communicate(timeout=240)
        except subprocess.TimeoutExpired:  # a process left waiting in a collective the others never joined
            for q in procs:
                q.kill()
            raise
        assert p.returncode == 0, err[-3000:]
        outs.append(json.loads(out.strip().splitlines()[-1]))
    return outs


def _train(root: Path, fashion: Path, processes: int, devices: int) -> list[dict]:
    return _ends(_start(root, fashion, processes, devices, ARGS))


def _event_files(run: Path) -> list[Path]:
    return [p for p in (run / run_folder.TENSORBOARD).rglob("events.out.tfevents.*")]


@pytest.mark.slow
def test_two_processes_train_one_run_equal_to_one_process_of_eight_devices(tmp_path: Path, fashion_dir: Path) -> None:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    one = _train(tmp_path / "one", fashion_dir, 1, 8)[0]
    two = _train(tmp_path / "two", fashion_dir, 2, 4)
    # Both processes end with the job's result, equal to one process of 8 devices on the same global batch.
    for out in two:
        assert out["state"] == "finished"
        assert abs(out["final"]["test/acc"] - one["final"]["test/acc"]) <= 1e-5
        assert abs(out["final"]["test/loss"] - one["final"]["test/loss"]) <= 1e-5
        assert abs(out["final"]["train/loss"] - one["final"]["train/loss"]) <= 1e-5
    runs = [p for p in (tmp_path / "two").iterdir() if p.is_dir()]
    assert len(runs) == 1, runs  # one run folder for the job: process 0's
    assert two[0]["run_dir"] == str(runs[0])
    assert json.loads((runs[0] / run_folder.STATUS).read_text())["devices"] == 8  # one mesh over both processes
    events = _event_files(runs[0])
    assert len(events) == 1, events  # one TensorBoard writer
    acc = EventAccumulator(str(events[0].parent))
    acc.Reload()
    steps = [e.step for e in acc.Scalars("train/loss")]
    assert steps == sorted(set(steps)) and steps[-1] == 16  # every step once (512 / 32 = 16 steps)
    rows = [json.loads(line) for line in (runs[0] / run_folder.RECORDS).read_text().splitlines() if line.strip()]
    logged = [r["step"] for r in rows if "train/loss" in r]
    assert len(logged) == len(set(logged)) and max(logged) == 16
    assert (runs[0] / run_folder.CHECKPOINTS).is_dir() and any(
        (runs[0] / run_folder.CHECKPOINTS).iterdir()
    )  # the job's checkpoint


@pytest.mark.slow
def test_a_stop_in_the_run_folder_ends_every_process_of_the_job_at_one_step(tmp_path: Path, fashion_dir: Path) -> None:
    root = tmp_path / "runs"
    long = ["--epochs", "20", "--batch-size", "32", "--train-limit", "2048", "--test-limit", "100", "--log-every", "4"]
    procs = _start(root, fashion_dir, 2, 4, long)
    deadline = time.monotonic() + 240
    run = None
    while time.monotonic() < deadline:  # wait for process 0's run to log a few chunks
        runs = [p for p in root.iterdir() if p.is_dir()] if root.exists() else []
        if (
            runs
            and (runs[0] / run_folder.RECORDS).exists()
            and (runs[0] / run_folder.RECORDS).read_text().count("\n") >= 3
        ):
            run = runs[0]
            break
        assert all(p.poll() is None for p in procs), [p.communicate()[1][-2000:] for p in procs]
        time.sleep(0.2)
    assert run is not None, "process 0 logged nothing"
    (run / run_folder.STOP).write_text("")  # the page's Stop: seen by process 0 only
    outs = _ends(procs)
    assert [o["state"] for o in outs] == ["stopped", "stopped"]
    assert outs[0]["final"] == outs[1]["final"]  # both left after the same step
    assert outs[0]["final"]["train/loss"] > 0
