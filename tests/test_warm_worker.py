"""The warm worker's rehearsal warms the process but never keeps a Start waiting."""

from __future__ import annotations

import os
import sys
import tempfile
import threading
import time
from pathlib import Path

from training import rehearsal


def test_a_job_on_stdin_stops_the_rehearsal_within_a_chunk(monkeypatch: object) -> None:
    read_end, write_end = os.pipe()
    monkeypatch.setattr(sys, "stdin", os.fdopen(read_end))  # type: ignore[attr-defined]
    monkeypatch.setattr(rehearsal, "REGRESSION", {"steps": 400_000})  # minutes, unless interrupted
    monkeypatch.setattr(rehearsal, "_jobs", lambda: [("regression", rehearsal.REGRESSION)] * 2)  # type: ignore[attr-defined]
    before = set(Path(tempfile.gettempdir()).glob("jaxdash-rehearsal-*"))

    threading.Timer(3.0, lambda: os.write(write_end, b'{"argv": []}\n')).start()
    t0 = time.monotonic()
    rehearsal.rehearse()
    took = time.monotonic() - t0

    assert 3.0 <= took < 30, took  # stopped after the job came, long before 2 x 400,000 steps
    assert sys.stdin.readline() == '{"argv": []}\n'  # the job is still there for the worker to read
    assert set(Path(tempfile.gettempdir()).glob("jaxdash-rehearsal-*")) == before  # its folder is gone
    os.close(write_end)


def test_no_rehearsal_when_turned_off(monkeypatch: object) -> None:
    monkeypatch.setenv("JAXDASH_REHEARSE", "0")  # type: ignore[attr-defined]
    monkeypatch.setattr(rehearsal, "_jobs", lambda: 1 / 0)  # type: ignore[attr-defined]
    rehearsal.rehearse()  # returns before looking for jobs
