"""The warm worker's rehearsal warms the process but never keeps a Start waiting."""

from __future__ import annotations

import os
import sys
import threading
import time

from training.runs import rehearsal
from training.runs.in_memory import train
from training.tasks.regression import RegressionConfig


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
