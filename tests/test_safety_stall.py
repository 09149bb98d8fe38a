"""A run that makes no progress reads "stalled since HH:MM:SS", not a rate and an ETA, and the page reaps what it
starts (#36 item 11): the rule with a fake clock, a real training process stopped with SIGSTOP, and a real
`python -m training` process started as the page starts one, gone (not a zombie) once it exits."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from components.series import progress_text
from runstore import run_folder

REPO = Path(__file__).resolve().parents[1]
T0 = 1_700_000_000.0  # the fake clock's start
WITHIN_S = 8.0  # "a few seconds": a stopped process reads stalled within this (runstore.processes.STOPPED_S is 3 s)


def clock(t: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(t))


def training(**extra: object) -> dict:
    status = {"state": "running", "phase": "training", "step": 3901, "total_steps": 200_000, "updated": T0}
    return status | {"wall_seconds": 1.0, "steps_per_sec": 3901.0} | extra


def test_stalled_since_is_a_function_of_status_times_and_now() -> None:
    s = training()
    moving = progress_text(s, now=T0 + 1)
    assert "3,901 steps/s" in moving and "ETA" in moving
    for text in (progress_text(s | {"stalled_since": T0}, now=T0 + 30), progress_text(s, now=T0 + 30)):
        assert text.startswith(f"stalled since {clock(T0)} (no progress for 30 s")
        assert "steps/s" not in text and "ETA" not in text and "step 3,901/200,000" in text

    from runstore.processes import STALL_S, STOPPED_S, stalled_since

    assert stalled_since(s, T0 + 1) is None and stalled_since(s, T0 + STALL_S - 1) is None
    assert stalled_since(s, T0 + STALL_S + 1) == T0
    assert stalled_since(s, T0 + 1, stopped=True) is None  # a stop just now: the chunk may have just been written
    assert stalled_since(s, T0 + STOPPED_S + 1, stopped=True) == T0  # the kernel holds it stopped: a few seconds
    for other in (training(phase="compiling"), training(state="finished"), training(updated=None)):
        assert stalled_since(other, T0 + 10 * STALL_S, stopped=True) is None


def _status(run_dir: Path) -> dict:
    try:
        return json.loads((run_dir / run_folder.STATUS).read_text())
    except (OSError, ValueError):
        return {}


def _wait(what: str, ok, timeout: float) -> None:  # noqa: ANN001 - a predicate
    deadline = time.monotonic() + timeout
    while not ok():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def test_a_training_process_stopped_with_sigstop_reads_stalled_within_seconds(tmp_path: Path) -> None:
    from dashboard.processes import launch_status

    run_dir = tmp_path / "runs" / "paused"
    cmd = [sys.executable, "-m", "training", "regression", "--steps", "100000000", "--log-every", "500"]
    cmd += ["--run-dir", str(run_dir), "--wandb", "disabled", "--quiet", "--no-tensorboard"]
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        _wait("training steps", lambda: (_status(run_dir).get("step") or 0) > 0 and proc.poll() is None, 180)
        moving = progress_text(launch_status.run_status(run_dir), now=time.time())
        assert "steps/s" in moving and "stalled" not in moving, moving
        proc.send_signal(signal.SIGSTOP)
        stopped_at = time.time()
        _wait("the stall", lambda: "stalled_since" in launch_status.run_status(run_dir), WITHIN_S + 5)
        took = time.time() - stopped_at
        status = launch_status.run_status(run_dir)
        text = progress_text(status, now=time.time())
        assert text.startswith(f"stalled since {clock(status['stalled_since'])}"), text
        assert "steps/s" not in text and "ETA" not in text
        assert took < WITHIN_S, f"{took:.1f} s to read stalled"
        proc.send_signal(signal.SIGCONT)
        _wait("progress again", lambda: "stalled_since" not in launch_status.run_status(run_dir), 60)
    finally:
        proc.send_signal(signal.SIGCONT)
        proc.kill()
        proc.wait()


def _zombie_or_alive(pid: int) -> str | None:
    """The /proc state letter of `pid` (Z for a zombie), or None once it is gone (reaped)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return None


def test_a_process_started_from_the_page_is_reaped_when_it_exits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dashboard.processes import launcher

    monkeypatch.setenv("JAXDASH_WARM_WORKER", "0")
    log = tmp_path / run_folder.LOG
    pid, via = launcher.start_now([sys.executable, "-m", "training", "tasks"], log)
    assert via == "cold" and pid != os.getpid()
    _wait("the process to exit and be reaped", lambda: _zombie_or_alive(pid) in (None, "Z") and log.stat().st_size, 60)
    deadline = time.monotonic() + 5
    while _zombie_or_alive(pid) == "Z" and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _zombie_or_alive(pid) is None, "the page's training process stayed a zombie under the server"
    assert "usage: python -m training" in log.read_text()


def test_the_runs_table_reads_a_stalled_run_as_stalled(tmp_path: Path) -> None:
    from dashboard.panels import runs_index
    from runstore import run_store

    now = time.time()
    runs = [
        run_store.RunInfo(name, tmp_path / name, name, "regression", {}, training(updated=updated), now - 100)
        for name, updated in (("moving", now), ("stuck", now - 60))
    ]
    df = runs_index.frame(runs, lambda task, config: "", lambda group: group)
    assert dict(zip(df["run_id"], df["status"], strict=True)) == {"moving": "running", "stuck": "stalled"}
