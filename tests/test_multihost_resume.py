"""A built-in engine job (`jax.distributed`, 2 processes x 4 CPU devices) stopped, resumed and killed.

Real processes of `python -m training` joined by the CLI's flags on localhost, gloo collectives,
real Fashion-MNIST, Orbax's multi-process checkpoints in one runs root (the shared filesystem of a
real cluster), TensorBoard's own event reader.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
from tensorboard.backend.event_processing import event_accumulator as ea

from runstore import run_folder, run_store
from runstore.run_folder import RunFolder
from tests.engine_jobs import ends, kill, records, start_job, wait_for

# 2 epochs of 8 steps: a checkpoint at step 8 is saved while the next chunk runs (Orbax's barriers
# must not interleave with the chunk's collectives), and the job's last at 16.
SHORT = ["--epochs", "2", "--batch-size", "32", "--train-limit", "256", "--test-limit", "200", "--log-every", "4"]
LONG = ["--epochs", "20", "--batch-size", "32", "--train-limit", "2048", "--test-limit", "100", "--log-every", "4"]


def _mnist(fashion: Path, root: Path, args: list[str]) -> list[str]:
    argv = ["mnist", "--dataset", "fashion_mnist", "--data-dir", str(fashion), "--devices", "0", *args]
    return [*argv, "--runs-root", str(root), "--quiet", "--wandb", "disabled"]


def _run_dir(root: Path) -> Path | None:
    dirs = run_store.run_folders(root) if root.exists() else []
    return dirs[0] if dirs and (dirs[0] / run_folder.STATUS).exists() else None


@pytest.mark.slow
def test_a_stopped_job_resumed_on_two_processes_ends_as_an_uninterrupted_one(tmp_path: Path, fashion_dir: Path) -> None:
    (tmp_path / "whole").mkdir()
    # Variables naming another job: the flags win (the variables alone would wait for a third process).
    wrong = {"JAX_COORDINATOR_ADDRESS": "localhost:1", "JAX_NUM_PROCESSES": "3", "JAX_PROCESS_ID": "2"}
    whole_root = tmp_path / "whole" / "runs"
    whole = ends(start_job(_mnist(fashion_dir, whole_root, SHORT), tmp_path / "whole", **wrong), tmp_path / "whole")
    (whole_run,) = run_store.run_folders(whole_root)  # one run folder for the job: process 0's
    assert whole[0]["run_dir"] == str(whole_run)
    assert RunFolder(whole_run).status()["devices"] == 8  # one mesh over both processes

    root = tmp_path / "runs"
    procs = start_job(_mnist(fashion_dir, root, SHORT), tmp_path)
    run = wait_for("process 0's run folder", lambda: _run_dir(root), procs)
    procs[0].send_signal(signal.SIGTERM)  # before its first step: the job stops after its first chunk
    stopped = ends(procs, tmp_path)
    assert [o["state"] for o in stopped] == ["stopped", "stopped"]
    assert RunFolder(run).status()["step"] == 4 and run.joinpath(run_folder.CHECKPOINTS, "4").is_dir()

    procs = start_job(["resume", str(run), "--quiet"], tmp_path)
    resumed = ends(procs, tmp_path)
    status = RunFolder(run).status()
    assert status["state"] == "finished" and status["resumed_from"] == 4, status
    assert status["pid"] == procs[0].pid  # process 0 marked it running; process 1 wrote none of it
    for out in resumed:
        assert out["run_dir"] == str(run) and out["state"] == "finished"
        for key in ("test/acc", "test/loss", "train/loss"):
            assert abs(out["final"][key] - whole[0]["final"][key]) <= 1e-5, (key, out["final"], whole[0]["final"])
    steps = [r["step"] for r in records(run) if "train/loss" in r]
    assert steps == sorted(set(steps)) and steps[0] == 0 and steps[-1] == 16  # every step once
    assert run_store.run_folders(root) == [run]
    (events,) = {p.parent for p in (run / run_folder.TENSORBOARD).rglob("events.out.tfevents.*")}
    acc = ea.EventAccumulator(str(events), size_guidance={ea.SCALARS: 0})
    acc.Reload()
    tb = [e.step for e in acc.Scalars("train/loss")]
    assert tb == sorted(set(tb)) and tb[-1] == 16  # TensorBoard's events past the checkpoint purged, then re-logged
    shown, _ = RunFolder(run).hosts()
    assert [(h["process"], h["pid"], h["state"]) for h in shown] == [(0, procs[0].pid, "finished"),
                                                                     (1, procs[1].pid, "finished")]  # fmt: skip


@pytest.mark.slow
def test_kill_9_of_process_1_crashes_the_run_naming_host_1_and_process_0_exits(
    tmp_path: Path, fashion_dir: Path
) -> None:
    root = tmp_path / "runs"
    procs = start_job(_mnist(fashion_dir, root, LONG), tmp_path, JAXDASH_LOST_HOST_GRACE_S="2")
    try:
        run = wait_for("process 0's run folder", lambda: _run_dir(root), procs)
        wait_for(
            "a few chunks", lambda: len(records(run)) >= 3 if (run / run_folder.RECORDS).exists() else False, procs
        )
        os.kill(procs[1].pid, signal.SIGKILL)
        procs[0].wait(timeout=90)  # not stuck in the next collective: it ends on its own, in bounded time
    finally:
        kill(procs)
    err = (tmp_path / "err0.txt").read_text()
    status = RunFolder(run).status()  # as the page reads it
    assert status["state"] == "crashed" and status["lost_host"] == 1, status
    assert status["message"].startswith(f"Host 1 (process 1 of 2, pid {procs[1].pid} on "), status
    if procs[0].returncode == -signal.SIGABRT:  # gloo's collective met the dead peer first and aborted process 0
        assert "gloo" in err, err[-3000:]  # (seen at load 14): the reader names host 1 from hosts.json
        return
    assert procs[0].returncode == 1 and status["ended"], (procs[0].returncode, err[-3000:])
    assert f"Host 1 (process 1 of 2, pid {procs[1].pid}" in err and "Traceback" not in err, err[-3000:]
    assert [h["state"] for h in RunFolder(run).hosts()[0]] == ["crashed", "crashed"]
