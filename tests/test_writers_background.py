"""Threads added by wrapping: `RunStoreWriter` writes in the caller's thread; `BackgroundWrites(writer)` runs its
chunks' writes on one thread, double-buffered, and raises a failed write at the next flush, drain or close."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import numpy as np
import pytest

from runstore import run_folder
from runstore.run_folder import RunFolder
from runstore.safe_files import UnsafePath
from runwriters.async_writer import BackgroundWrites
from runwriters.base import Progress
from runwriters.store import RecordFile, RunStoreWriter


class GatedFile(RecordFile):
    """A real record file whose appends wait for `gate` and note the thread they ran on."""

    def __init__(self, run_dir: Path) -> None:
        super().__init__(run_dir)
        self.gate = threading.Event()
        self.threads: list[threading.Thread] = []

    def append(self, lines: str) -> None:
        self.threads.append(threading.current_thread())
        assert self.gate.wait(30), "the test never opened the gate"
        super().append(lines)


def _steps(run_dir: Path) -> list[int]:
    return [r["step"] for r in RunFolder(run_dir).records()[0]]


def test_the_run_store_writes_each_flush_in_the_callers_thread(tmp_path: Path) -> None:
    files = GatedFile(tmp_path)
    files.gate.set()
    w = RunStoreWriter(tmp_path, files=files)
    w.write_scalars(1, {"loss": 0.5}, Progress(step=1, total_steps=4))
    w.flush()
    assert _steps(tmp_path) == [1] and RunFolder(tmp_path).raw_status()["step"] == 1  # on disk at return
    assert files.threads == [threading.current_thread()]
    w.close()


def test_background_writes_are_double_buffered_on_one_thread(tmp_path: Path) -> None:
    files = GatedFile(tmp_path)
    w = BackgroundWrites(RunStoreWriter(tmp_path, files=files))
    assert w.run_dir == tmp_path  # the writer's attributes show through (jaxdash.log_media finds the folder so)
    w.write_scalar_rows(np.array([1, 2]), {"loss": np.array([0.5, 0.25])}, Progress(step=2, total_steps=4))
    w.flush()  # returns while the chunk's append still waits at the gate
    assert not RunFolder(tmp_path).records_path.exists()
    w.write_scalars(3, {"loss": 0.125})
    files.gate.set()
    w.flush()  # waits for chunk 1, then hands over chunk 2
    assert _steps(tmp_path)[:2] == [1, 2]
    w.write_summary({"loss": 0.125})  # after the chunk in flight: its progress is not lost
    w.write_scalars(4, {"loss": 0.0625})  # never flushed: close writes it
    w.close()
    assert _steps(tmp_path) == [1, 2, 3, 4]
    status = RunFolder(tmp_path).raw_status()
    assert status["final"] == {"loss": 0.125} and status["step"] == 2
    (thread,) = set(files.threads)  # every chunk on one thread, not the caller's
    assert len(files.threads) == 3 and thread is not threading.current_thread() and thread.name.startswith("run-store")
    assert not thread.is_alive(), "close stops the thread"


@pytest.mark.parametrize("then", ["flush", "drain", "close"])
def test_a_failed_background_write_is_raised_by_the_next_call(tmp_path: Path, then: str) -> None:
    """metrics.jsonl planted as a link: the write is refused on the thread; the next flush, drain or close raises
    that refusal, naming the file."""
    os.symlink(tmp_path / "elsewhere", RunFolder(tmp_path).records_path)
    files = GatedFile(tmp_path)
    files.gate.set()
    w = BackgroundWrites(RunStoreWriter(tmp_path, files=files))
    w.write_scalars(1, {"loss": 0.5})
    w.flush()  # the refusal happens on the thread
    w.write_scalars(2, {"loss": 0.25})
    with pytest.raises(UnsafePath, match=run_folder.RECORDS):
        getattr(w, then)()
    if then != "close":
        w.drain()  # raised once: nothing waits any more
        with pytest.raises(UnsafePath):
            w.close()  # the buffered step 2 meets the same link
    assert not (tmp_path / "elsewhere").exists(), "never written through the link"
    assert files.threads[0] is not threading.current_thread() and not files.threads[0].is_alive()
