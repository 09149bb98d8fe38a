"""A `jax.distributed` job of two processes on this machine (CPU, 4 forced devices each) is one run.

Real processes, a real coordinator (`jax.distributed.initialize` on localhost), real TensorBoard
reader and W&B offline files. Process 1 gets a runs root of its own that must stay empty: the run
folder is process 0's alone, and process 1's heartbeat reaches it through JAX's coordination service.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tensorboard.backend.event_processing import event_accumulator as ea

from runstore import run_folder, run_store
from runstore.run_folder import RunFolder
from tests.client_scripts import rows, script_env, wandb_history, write

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

SCRIPT = """
import os, sys, time
import jax, jax.numpy as jnp, numpy as np

i, port = int(sys.argv[1]), sys.argv[2]
jax.distributed.initialize(coordinator_address=f"localhost:{port}", num_processes=2, process_id=i)
import jaxdash
from jax.sharding import NamedSharding, PartitionSpec as P

sharding = NamedSharding(jax.make_mesh((8,), ("data",)), P("data"))  # 2 processes x 4 devices
loss_of = jax.jit(lambda x: jnp.mean(x ** 2))
only0, steps = os.environ.get("ONLY0") == "1", int(os.environ.get("STEPS", "0"))
run = jaxdash.init(project="multihost", config={"lr": 0.1}) if i == 0 or not only0 else None  # W&B's advice
print("run", run and run.id, jax.process_index(), jax.process_count(), flush=True)
step = 0
while (step < steps) if steps else not run.should_stop():  # every process gets process 0's answer
    if os.environ.get("GLOBAL") == "1":  # one global batch: 4 values from each process, a collective mean
        x = jax.make_array_from_process_local_data(sharding, np.full(4, step + 4.0 * i, np.float32))
        loss = loss_of(x)
    else:
        loss = jnp.float32(step)
    if run is not None:
        run.log({"train/loss": loss})  # process 1: counted, never fetched, never written
    step += 1
    time.sleep(0.01)  # the rest of a training step
print("stopped after", step, flush=True)
if run is not None:
    run.finish()
"""


def _port() -> int:
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


def _start_job(tmp_path: Path, **env: str) -> tuple[list[subprocess.Popen], Path]:
    """Both processes of the job: (processes, process 0's runs root); process 1's own root is runs-1."""
    path, port = write(tmp_path, SCRIPT, "job.py"), str(_port())
    procs = []
    for i in range(2):
        extra = {"XLA_FLAGS": "--xla_force_host_platform_device_count=4", "JAXDASH_HEARTBEAT_S": "0.2", **env}
        log = open(tmp_path / f"process{i}.log", "w")  # noqa: SIM115 - closed with the process
        procs.append(subprocess.Popen([sys.executable, str(path), str(i), port], cwd=tmp_path, stdout=log,
                                      stderr=subprocess.STDOUT, env=script_env(tmp_path / f"runs-{i}", **extra)))  # fmt: skip
    return procs, tmp_path / "runs-0"


def _wait(what: str, found: Callable[[], Any], procs: list[subprocess.Popen], tmp_path: Path,
          timeout: float = 120) -> Any:  # fmt: skip
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = found()
        if value:
            return value
        if any(p.poll() not in (None, 0) for p in procs[:1]):
            break
        time.sleep(0.1)
    logs = "\n".join((tmp_path / f"process{i}.log").read_text()[-1500:] for i in range(2))
    raise AssertionError(f"never saw {what}\n{logs}")


def _run_dir(root: Path) -> Path | None:
    dirs = run_store.run_folders(root) if root.exists() else []
    return dirs[0] if dirs and (dirs[0] / run_folder.STATUS).exists() else None


def _keys(run_dir: Path) -> set[str]:
    return {k for r in rows(run_dir) for k in r}


def _kill(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        if p.poll() is None:
            p.kill()
        p.wait(timeout=30)


def test_two_processes_make_one_run_one_wandb_run_one_tensorboard_writer(tmp_path: Path) -> None:
    procs, root = _start_job(tmp_path, GLOBAL="1")
    try:
        run_dir = _wait("the run folder", lambda: _run_dir(root), procs, tmp_path)
        both = {"sys/host0/cpu_percent", "sys/host1/cpu_percent", "sys/host1/rss_mb"}
        _wait("both hosts' system metrics", lambda: both <= _keys(run_dir), procs, tmp_path)
        RunFolder(run_dir).request_stop()  # the page's Stop: both processes end after the same step
        for p in procs:
            p.wait(timeout=60)
    finally:
        _kill(procs)
    logs = [(tmp_path / f"process{i}.log").read_text() for i in range(2)]
    assert [p.returncode for p in procs] == [0, 0], logs
    (n0,), (n1,) = ([int(line.split()[-1]) for line in log.splitlines() if line.startswith("stopped after")]
                    for log in logs)  # fmt: skip
    assert n0 == n1 > 0, logs
    assert [line for line in logs[1].splitlines() if line.startswith("run ")] == [f"run {run_dir.name} 1 2"]
    assert run_store.run_folders(root) == [run_dir]
    assert not (tmp_path / "runs-1").exists()  # process 1 wrote nothing of the run anywhere

    records = rows(run_dir)
    losses = [(r["step"], r["train/loss"]) for r in records if "train/loss" in r]
    assert [s for s, _ in losses] == list(range(n0))  # every step once
    assert len({r["step"] for r in records}) == len(records)
    assert all(loss == pytest.approx((s**2 + (s + 4) ** 2) / 2) for s, loss in losses)  # the global batch's mean
    assert both <= _keys(run_dir)
    status = RunFolder(run_dir).status()
    assert status["state"] == "stopped", status

    (event_file,) = (run_dir / run_folder.TENSORBOARD).rglob("events.out.tfevents.*")  # one TensorBoard writer
    acc = ea.EventAccumulator(str(event_file.parent), size_guidance={ea.SCALARS: 0})
    acc.Reload()
    assert [e.step for e in acc.Scalars("train/loss")] == list(range(n0))

    wandb_runs = [p for p in tmp_path.rglob("offline-run-*") if p.is_dir()]
    assert len(wandb_runs) == 1, wandb_runs  # one W&B run, process 0's
    history = wandb_history(wandb_runs[0])
    assert [h["_step"] for h in history if "train/loss" in h] == list(range(n0))

    shown, problem = RunFolder(run_dir).hosts()
    assert problem is None
    assert [(h["process"], h["pid"], h["state"]) for h in shown] == [(0, procs[0].pid, "stopped"),
                                                                     (1, procs[1].pid, "stopped")]  # fmt: skip
    assert all(h["seen"] and "rss_mb" in h["sys"] for h in shown)


def test_kill_9_of_process_1_reads_crashed_naming_host_1(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    procs, root = _start_job(tmp_path)
    try:
        run_dir = _wait("the run folder", lambda: _run_dir(root), procs, tmp_path)

        def host1_running() -> bool:
            shown = RunFolder(run_dir).hosts()[0]
            return len(shown) == 2 and shown[1]["state"] == "running" and bool(rows(run_dir))

        _wait("host 1 running", host1_running, procs, tmp_path)
        os.kill(procs[1].pid, signal.SIGKILL)
        procs[1].wait(timeout=30)
        status = _wait("the run crashed", lambda: _crashed(run_dir), procs, tmp_path)
        assert procs[0].poll() is None  # process 0 lives on: the run reads crashed all the same
        assert status["message"].startswith(f"Host 1 (process 1 of 2, pid {procs[1].pid} on "), status
        assert status["lost_host"] == 1
        shown = RunFolder(run_dir).hosts()[0]
        assert [(h["process"], h["state"]) for h in shown] == [(0, "running"), (1, "crashed")]

        monkeypatch.setenv("JAXDASH_RUNS", str(root))
        from tests.apptest_pages import app

        at = app("views/detail.py", run=run_dir.name)
        table = next(t.value for t in at.table)
        assert list(table.index) == ["0", "1"] and table.loc["1", "pid"] == str(procs[1].pid)
        assert table.loc["1", "state"].startswith("crashed: its process is gone"), table
        assert table.loc["0", "state"] == "running" and table.loc["1", "last heartbeat"].endswith("s ago")

        RunFolder(run_dir).request_stop()  # process 0 ends its loop: the run stays crashed, host 1 named
        ended = _wait("process 0's end", lambda: (s := RunFolder(run_dir).status()).get("ended") and s, procs,
                      tmp_path)  # fmt: skip
        assert ended["state"] == "crashed" and ended["message"] == status["message"], ended
    finally:
        _kill(procs)  # process 0's jax.distributed shutdown would wait for process 1 (JAX's 100 s timeout)


def _crashed(run_dir: Path) -> dict[str, Any] | None:
    status = RunFolder(run_dir).status()
    return status if status.get("state") == "crashed" else None


def test_init_on_process_0_only_is_one_run_and_never_a_lost_host(tmp_path: Path) -> None:
    """W&B's advice (`if jax.process_index() == 0: wandb.init()`): process 1 never reports, and is not lost."""
    procs, root = _start_job(tmp_path, GLOBAL="1", ONLY0="1", STEPS="100", JAXDASH_HOST_TIMEOUT_S="0.5")
    try:
        for p in procs:
            p.wait(timeout=120)
    finally:
        _kill(procs)
    logs = [(tmp_path / f"process{i}.log").read_text() for i in range(2)]
    assert [p.returncode for p in procs] == [0, 0], logs
    (run_dir,) = run_store.run_folders(root)
    status = RunFolder(run_dir).status()
    assert status["state"] == "finished" and "lost_host" not in status, status
    assert [r["step"] for r in rows(run_dir) if "train/loss" in r] == list(range(100))
    assert "sys/host0/cpu_percent" in _keys(run_dir) and not any(k.startswith("sys/host1/") for k in _keys(run_dir))
    shown, _ = RunFolder(run_dir).hosts()
    assert [(h["process"], h["state"], h["seen"]) for h in shown][1] == (1, "unknown", None)
    assert shown[0]["state"] == "finished"


def test_a_damaged_hosts_json_is_one_line_on_run_detail(root: Path) -> None:
    from tests.apptest_pages import app, fake_run

    run_dir = fake_run(root, state="finished")
    (run_dir / run_folder.HOSTS).write_text('{"hosts": [{"process": 0')  # truncated
    at = app("views/detail.py", run=run_dir.name)
    (warning,) = [w.value for w in at.warning if run_folder.HOSTS in w.value]
    assert warning.startswith("hosts.json: not valid JSON") and warning.endswith("the hosts of this run are not shown.")
    assert "\n" not in warning
    assert not at.table and not at.exception


def test_a_host_that_stops_beating_is_lost_after_the_timeout(tmp_path: Path) -> None:
    """The path for a host on another machine (its pid cannot be looked at): no heartbeat for the timeout."""
    procs, root = _start_job(tmp_path, JAXDASH_HOST_TIMEOUT_S="1.5")
    try:
        run_dir = _wait("the run folder", lambda: _run_dir(root), procs, tmp_path)
        _wait("host 1 running", lambda: [h["state"] for h in RunFolder(run_dir).hosts()[0]] == ["running"] * 2, procs,
              tmp_path)  # fmt: skip
        os.kill(procs[1].pid, signal.SIGSTOP)  # alive, silent: as a hung or unreachable machine looks
        status = _wait("the run crashed", lambda: _crashed(run_dir), procs, tmp_path)
        assert (
            status["message"].startswith("Host 1 (process 1 of 2, ") and "no heartbeat for 1.5 s" in status["message"]
        )
        assert [h["state"] for h in RunFolder(run_dir).hosts()[0]] == ["running", "crashed"]
    finally:
        if procs[1].poll() is None:
            os.kill(procs[1].pid, signal.SIGCONT)
        _kill(procs)
