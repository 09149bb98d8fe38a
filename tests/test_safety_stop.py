"""Stop only signals a process that is verifiably the run's own training process.

A hand-written status.json naming an unrelated process, a pid on another host, a reused pid
(a process newer than the run): the stop file is written, nothing is signalled.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from dashboard.processes import launcher
from runstore import run_folder, run_store
from runstore.run_folder import RunFolder

ROOT = Path(__file__).resolve().parents[1]
APP = str(ROOT / "dashboard" / "app.py")


@pytest.fixture
def sleeper() -> Iterator[subprocess.Popen]:
    """An unrelated process (`sleep 60`), killed afterwards."""
    proc = subprocess.Popen(["sleep", "60"])
    yield proc
    proc.kill()
    proc.wait()


def hand_written_run(root: Path, pid: int, **status: object) -> Path:
    d = run_store.new_run_dir(root, "regression", "hand-written")
    RunFolder(d).write_config("regression", {"lr": 0.1}, name="hand-written")
    doc = {"state": "running", "pid": pid, "host": socket.gethostname(), "started": time.time(), "step": 1, **status}
    (d / run_folder.STATUS).write_text(json.dumps(doc))
    return d


def test_stop_does_not_kill_an_unrelated_process_named_in_status_json(runs_root: Path, sleeper) -> None:
    d = hand_written_run(runs_root, sleeper.pid)
    assert RunFolder(d).status()["state"] == "running"  # the pid is alive, so the run looks alive
    assert not run_store.owns_process(RunFolder(d).status(), d)
    assert launcher.stop(d) is False
    time.sleep(0.3)
    assert sleeper.poll() is None, "the unrelated sleep was signalled"
    assert RunFolder(d).stop_requested()  # the stop file is all that was done


def test_stop_button_on_the_live_page_leaves_the_unrelated_process_alone(
    runs_root: Path, sleeper, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JAXDASH_WARM_WORKER", "0")
    d = hand_written_run(runs_root, sleeper.pid)
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["run"] = d.name
    at.run()
    at.switch_page("views/live.py").run()
    at.button(key="stop_run").click().run()
    assert not at.exception
    time.sleep(0.3)
    assert sleeper.poll() is None
    assert any("No process was signalled" in t.value for t in at.toast)


def test_owns_process_refuses_other_hosts_reused_pids_and_bad_values(runs_root: Path) -> None:
    code = "import sys, time; print('ready', flush=True); time.sleep(60)"
    d = run_store.new_run_dir(runs_root, "regression", "own")
    # A process whose command line runs `training` code and names this run directory. Popen returns once the
    # child began its exec, which may be before the kernel has set up its new command line: wait for its line.
    proc = subprocess.Popen([sys.executable, "-c", code, "training", str(d)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        own = {"pid": proc.pid, "host": socket.gethostname(), "started": time.time()}
        assert run_store.owns_process(own, d)
        assert not run_store.owns_process({**own, "host": "elsewhere"}, d)
        assert not run_store.owns_process({**own, "started": time.time() - 3600}, d)  # pid reused by a newer process
        assert not run_store.owns_process({**own, "started": None}, d)
        other = run_store.new_run_dir(runs_root, "regression", "other")
        assert not run_store.owns_process(own, other)  # not this run's process
        for pid in (None, "123", True, 0, 1, -5, 2**22 + 999):
            assert not run_store.owns_process({**own, "pid": pid}, d)
    finally:
        proc.kill()
        proc.wait()


def test_stop_signals_the_runs_own_training_process(runs_root: Path) -> None:
    d = run_store.new_run_dir(runs_root, "regression", "real")
    code = (
        "import sys, time, training; from pathlib import Path; from runstore.run_folder import RunFolder; "
        "RunFolder(sys.argv[1]).start_status(total_steps=10); print('ready', flush=True); time.sleep(60)"
    )
    proc = subprocess.Popen([sys.executable, "-c", code, str(d)], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        assert launcher.stop(d) is True
        assert proc.wait(10) == -15  # SIGTERM
    finally:
        proc.kill()


def test_sigterm_as_soon_as_status_json_appears_ends_the_run_stopped(tmp_path: Path) -> None:
    """The handler is in place before status.json says "running": no run is left "running" by a SIGTERM."""
    d = tmp_path / "run"
    cmd = [sys.executable, "-m", "training", "regression", "--steps", "100000", "--run-dir", str(d)]
    proc = subprocess.Popen([*cmd, "--wandb", "disabled", "--quiet"], cwd=ROOT, stdout=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not (d / run_folder.STATUS).exists() and time.monotonic() < deadline:
            time.sleep(0.005)
        proc.terminate()
        assert proc.wait(60) == 0
    finally:
        proc.kill()
    assert json.loads((d / run_folder.STATUS).read_text())["state"] == "stopped"
