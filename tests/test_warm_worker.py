"""The warm worker's rehearsal warms the process but never keeps a Start waiting."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from training.runs import rehearsal
from training.runs.in_memory import train
from training.tasks.regression import RegressionConfig

REPO = Path(__file__).resolve().parent.parent


def test_a_job_on_stdin_abandons_the_rehearsal_at_once(monkeypatch: object) -> None:
    read_end, write_end = os.pipe()
    monkeypatch.setattr(sys, "stdin", os.fdopen(read_end))  # type: ignore[attr-defined]
    long_run = [lambda: train("regression", RegressionConfig(steps=400_000))] * 2  # minutes, unless abandoned
    monkeypatch.setattr(rehearsal, "_jobs", lambda: long_run)  # type: ignore[attr-defined]

    threading.Timer(3.0, lambda: os.write(write_end, b'{"argv": []}\n')).start()
    t0 = time.monotonic()
    rehearsal.rehearse()
    took = time.monotonic() - t0

    assert 3.0 <= took < 15, took  # abandoned once the job came, long before 2 x 400,000 steps
    assert sys.stdin.readline() == '{"argv": []}\n'  # the job is still there for the worker to read
    os.kill(os.getpid(), 0)  # and this process is fine: a late signal would have no handler raising
    os.close(write_end)


def test_an_abandon_swallowed_where_python_only_reports_it_is_sent_again(monkeypatch: object) -> None:
    """A raise landing in a gc callback or a __del__ is reported, not raised: the next signal ends the rehearsal."""
    read_end, write_end = os.pipe()
    monkeypatch.setattr(sys, "stdin", os.fdopen(read_end))  # type: ignore[attr-defined]
    swallowed = []

    def swallows_the_first_abandon() -> None:
        end = time.monotonic() + 60  # a minute of work unless abandoned
        while time.monotonic() < end:
            try:
                time.sleep(0.005)
            except BaseException as exc:  # as Python does with a raise in a gc callback
                if swallowed:
                    raise
                swallowed.append(exc)

    monkeypatch.setattr(rehearsal, "_jobs", lambda: [swallows_the_first_abandon])  # type: ignore[attr-defined]
    threading.Timer(0.5, lambda: os.write(write_end, b'{"argv": []}\n')).start()
    t0 = time.monotonic()
    rehearsal.rehearse()
    took = time.monotonic() - t0
    assert len(swallowed) == 1 and type(swallowed[0]).__name__ == "_Abandon"
    assert 0.5 <= took < 10, took


def test_the_rehearsal_trains_both_tasks(monkeypatch: object) -> None:
    read_end, write_end = os.pipe()
    monkeypatch.setattr(sys, "stdin", os.fdopen(read_end))  # type: ignore[attr-defined]
    results = []
    jobs = rehearsal._jobs()
    monkeypatch.setattr(rehearsal, "_jobs", lambda: [lambda j=j: results.append(j()) for j in jobs])  # type: ignore[attr-defined]
    rehearsal.rehearse()
    assert [r[0].state for r in results] == ["finished", "finished"], results
    os.close(write_end)


def test_no_rehearsal_when_turned_off(monkeypatch: object) -> None:
    monkeypatch.setenv("JAXDASH_REHEARSE", "0")  # type: ignore[attr-defined]
    monkeypatch.setattr(rehearsal, "_jobs", lambda: 1 / 0)  # type: ignore[attr-defined]
    rehearsal.rehearse()  # returns before looking for jobs


def test_an_abandon_during_an_import_waits_until_the_import_is_done(tmp_path, monkeypatch) -> None:
    """Raised inside an import, the abandon would leave jaxlib's dialects registered but not imported."""
    import importlib
    import signal

    resent = threading.Event()
    previous = signal.signal(signal.SIGUSR1, lambda *_: resent.set())
    (tmp_path / "slow_module.py").write_text(
        "import sys\nfrom training.runs import rehearsal\n"
        "rehearsal._on_signal(10, sys._getframe())  # the signal arrives while this module runs\nDONE = True\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(rehearsal._state, "rehearsing", True)
    try:
        assert importlib.import_module("slow_module").DONE  # not interrupted
        assert resent.wait(5)  # sent again, to abandon once out of the import
        with pytest.raises(rehearsal._Abandon):
            rehearsal._on_signal(signal.SIGUSR1, sys._getframe())  # outside an import: at once
    finally:
        signal.signal(signal.SIGUSR1, previous)


def test_a_worker_whose_dashboard_went_away_exits_whatever_threads_its_rehearsal_left(tmp_path) -> None:
    """A rehearsal abandoned at any bytecode can leave a pool thread no shutdown will stop; a worker that
    gets no job must still end when its server does, not hold a JAX process for ever."""
    import subprocess

    left_behind = "import threading; threading.Thread(target=threading.Event().wait).start()"  # never ends
    code = f"{left_behind}; from training.__main__ import main; import sys; sys.exit(main(['worker']))"
    env = {**os.environ, "JAXDASH_REHEARSE": "0", "JAXDASH_RUNS": str(tmp_path)}
    worker = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
    try:
        assert worker.stdout.readline().strip() == b"ready"
        worker.stdin.close()  # the dashboard is gone
        assert worker.wait(30) == 0
    finally:
        worker.kill()


def test_a_worker_leaves_after_its_job_whatever_threads_remain(tmp_path: Path) -> None:
    """A worker's process ends once its job returns, even with a thread left that the interpreter's teardown would
    wait on for ever (a rehearsal abandoned by the job's signal can leave one): seen as a worker still alive 120 s
    after its run ended, which kept the page's next warm worker from being the only one."""
    script = (
        "import sys, threading\n"
        "from training.runs.warm_worker import warm_worker\n"
        "def main(argv):\n"
        "    threading.Thread(target=threading.Event().wait).start()  # never ends, not a daemon\n"
        "    print('job', *argv, flush=True)\n"
        "    return 3\n"
        "sys.exit(warm_worker(main))\n"
    )
    env = {**os.environ, "JAXDASH_REHEARSE": "0", "PYTHONPATH": str(REPO)}
    job = json.dumps({"argv": ["x"], "env": {}, "cwd": str(tmp_path)}) + "\n"
    done = subprocess.run([sys.executable, "-c", script], input=job, capture_output=True, text=True, env=env,
                          timeout=60)  # fmt: skip
    assert done.returncode == 3 and "job x" in done.stdout, done.stderr[-2000:]
