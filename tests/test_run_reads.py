"""runstore/run_reads.py: an ended run is read once, and again as soon as one of its files changes."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

from dashboard.processes import launch_status
from dashboard.reading import runs_page
from runstore import index_pages, run_folder, run_index, run_reads, run_store
from runstore.run_folder import RunFolder


def make(root: Path, name: str, state_: str, pid: int | None = None) -> Path:
    d = run_store.new_run_dir(root, "regression", name)
    RunFolder(d).write_config("regression", {"lr": 0.1}, name=name)
    RunFolder(d).write_status(state=state_, pid=pid or 2**22 + 7, started=time.time())
    return d


def by_name(runs: list[run_store.RunInfo]) -> dict[str, run_store.RunInfo]:
    return {r.name: r for r in runs}


def test_ended_runs_are_reused_until_a_file_changes(tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    done = make(tmp_path, "done", "finished")
    live = make(tmp_path, "live", "running", pid=os.getpid())
    reads: list[Path] = []
    real = run_store.read_run
    monkeypatch.setattr(run_store, "read_run", lambda d: reads.append(d) or real(d))
    first = by_name(run_reads.list_runs(tmp_path, launch_status.run_status))
    assert first["done"].status["state"] == "finished" and first["live"].status["state"] == "running"
    reads.clear()
    again = by_name(run_reads.list_runs(tmp_path, launch_status.run_status))
    assert reads == [live]  # the running run is read again, the ended one is not
    again["done"].status["state"] = "changed by a caller"
    assert by_name(run_reads.list_runs(tmp_path, launch_status.run_status))["done"].status["state"] == "finished"
    RunFolder(done).write_status(final={"train/loss": 0.5})
    reads.clear()
    assert by_name(run_reads.list_runs(tmp_path, launch_status.run_status))["done"].status["final"] == {
        "train/loss": 0.5
    }
    assert done in reads


def test_a_run_that_ends_or_is_deleted_shows_at_once(tmp_path: Path) -> None:
    live = make(tmp_path, "live", "running", pid=os.getpid())
    assert run_reads.list_runs(tmp_path, launch_status.run_status)[0].status["state"] == "running"
    RunFolder(live).write_status(state="stopped", ended=time.time())
    assert run_reads.list_runs(tmp_path, launch_status.run_status)[0].status["state"] == "stopped"
    shutil.rmtree(live)
    assert run_reads.list_runs(tmp_path, launch_status.run_status) == []


def test_a_damaged_run_is_read_every_time(tmp_path: Path) -> None:
    d = make(tmp_path, "bad", "finished")
    (d / run_folder.STATUS).write_text("{not json")
    assert run_reads.list_runs(tmp_path, launch_status.run_status)[0].status["state"] == "damaged"
    run_store.atomic_write_json(d / run_folder.STATUS, {"state": "finished", "pid": 1, "started": 1.0})
    assert run_reads.list_runs(tmp_path, launch_status.run_status)[0].status["state"] == "finished"


def test_the_runs_page_reads_a_selected_ended_run_once_until_a_file_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    done = make(tmp_path, "done", "finished")
    live = make(tmp_path, "live", "running", pid=os.getpid())
    run_index.update(tmp_path)
    rows = {r.name: r for r in index_pages.matching(tmp_path)}
    reads: list[Path] = []
    real = run_store.read_run
    monkeypatch.setattr(run_store, "read_run", lambda d: reads.append(d) or real(d))
    first = by_name(runs_page.infos([rows["done"], rows["live"]]))
    assert first["done"].status["state"] == "finished" and first["live"].status["state"] == "running"
    reads.clear()
    runs_page.infos([rows["done"], rows["live"]])  # another page run, a fresh tab: the ended run as last read
    assert reads == [live]
    RunFolder(done).write_status(final={"train/loss": 0.5})
    assert by_name(runs_page.infos([rows["done"]]))["done"].status["final"] == {"train/loss": 0.5}
