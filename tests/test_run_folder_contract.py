"""The run folder's contract (`runstore.run_storage.RunStorage`), as a suite every implementation passes.

Parametrized over the implementations: the local folder (`RunFolder`) today. Each test checks one documented
promise of an operation: what it returns, what it raises, what stays whole, what a reader may assume.
"""

from __future__ import annotations

import math
import os
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from runstore import run_folder
from runstore.run_checks import DamagedRunFile
from runstore.run_folder import RecordsReader, RunFolder
from runstore.safe_files import UnsafePath

IMPLEMENTATIONS: dict[str, Callable[[Path], RunFolder]] = {"local folder": RunFolder}


@pytest.fixture(params=sorted(IMPLEMENTATIONS))
def store(request: pytest.FixtureRequest, tmp_path: Path) -> RunFolder:
    run = tmp_path / "run"
    run.mkdir()
    return IMPLEMENTATIONS[request.param](run)


def test_every_operation_of_the_contract_is_implemented() -> None:
    for make in IMPLEMENTATIONS.values():
        assert not getattr(make, "__abstractmethods__", None), make


def test_config_written_once_merged_and_replaced(store: RunFolder) -> None:
    assert store.config() is None and store.checked_config() is None
    store.write_config("regression", {"lr": 0.1}, name="first", command=["python"], group="g")
    doc = store.checked_config()
    assert doc["task"] == "regression" and doc["config"] == {"lr": 0.1} and doc["name"] == "first"
    assert doc["group"] == "g" and doc["command"] == ["python"] and isinstance(doc["created"], float)
    store.merge_config(config={"lr": 0.2}, define_metric=[{"name": "acc"}])
    merged = store.config()
    assert merged["config"] == {"lr": 0.2} and merged["task"] == "regression" and merged["define_metric"]
    store.replace_config({"task": "other"})
    assert store.config() == {"task": "other"}  # replace keeps nothing of the old document


def test_a_damaged_config_raises_naming_the_file_and_merge_starts_over(store: RunFolder) -> None:
    store.replace_config({"task": "x"})
    Path(store.path, run_folder.CONFIG).write_text('{"task": "x", ')  # truncated
    with pytest.raises(DamagedRunFile, match=run_folder.CONFIG):
        store.checked_config()
    assert store.config("fallback") == "fallback"
    store.merge_config(task="y")
    assert store.config() == {"task": "y"}


def test_status_merges_and_a_gone_process_reads_as_crashed(store: RunFolder) -> None:
    assert store.status() == {}
    store.write_status(state="running", pid=os.getpid(), step=1)
    store.write_status(step=2)
    assert store.status()["state"] == "running" and store.status()["step"] == 2
    store.write_status(pid=2**22 + 12345)  # no such process on this machine
    crashed = store.status()
    assert crashed["state"] == "crashed" and crashed["message"]
    assert store.raw_status()["state"] == "running"  # as written


def test_status_merges_from_threads_lose_no_field(store: RunFolder) -> None:
    threads = [threading.Thread(target=store.write_status, kwargs={f"f{i}": i}) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    status = store.raw_status()
    assert all(status[f"f{i}"] == i for i in range(8)) and "updated" in status


def test_a_damaged_status_reads_as_damaged_and_a_write_replaces_it(store: RunFolder) -> None:
    Path(store.path, run_folder.STATUS).write_text("[1, 2")
    damaged = store.status()
    assert damaged["state"] == "damaged" and damaged["message"].startswith(run_folder.STATUS)
    store.write_status(state="finished")
    assert store.status()["state"] == "finished"


def test_events_keep_the_newest(store: RunFolder) -> None:
    for i in range(run_folder.MAX_EVENTS + 5):
        store.add_event("write_gap", f"gap {i}")
    events = store.raw_status()["events"]
    assert len(events) == run_folder.MAX_EVENTS and events[-1]["message"] == f"gap {run_folder.MAX_EVENTS + 4}"


def test_records_are_appended_whole_and_read_from_an_offset(store: RunFolder) -> None:
    assert store.records() == ([], 0)
    store.append_records([{"step": 1, "loss": 0.5}, {"step": 2, "loss": math.nan}])
    records, end = store.records()
    assert records[0] == {"step": 1, "loss": 0.5} and records[1]["loss"] == "nan" and end > 0
    store.append_records([{"step": 3}])
    assert store.records(end) == ([{"step": 3}], Path(store.records_path).stat().st_size)


def test_a_torn_last_line_waits_and_a_bad_line_is_skipped(store: RunFolder) -> None:
    store.append_records([{"step": 1}])
    with open(store.records_path, "ab") as f:
        f.write(b"not json\n" + b'{"step": 2, "lo')
    records, end = store.records()
    assert records == [{"step": 1}]
    with open(store.records_path, "ab") as f:
        f.write(b'ss": 1}\n')
    assert store.records(end)[0] == [{"step": 2, "loss": 1}]


def test_replaced_records_start_a_reader_over(store: RunFolder) -> None:
    store.append_records([{"step": s} for s in range(5)])
    reader = RecordsReader(store.path)
    assert [r["step"] for r in reader.read_new()] == [0, 1, 2, 3, 4]
    store.replace_records([{"step": 0}, {"step": 1}])
    assert [r["step"] for r in reader.read_new()] == [0, 1]  # a new file: read from its start, once
    assert reader.read_new() == []


def test_records_never_follow_a_link(store: RunFolder, tmp_path: Path) -> None:
    outside = tmp_path / "outside.jsonl"
    outside.write_text('{"step": 1}\n')
    Path(store.records_path).symlink_to(outside)
    assert store.records() == ([], 0)
    with pytest.raises(UnsafePath):
        store.append_records([{"step": 2}])
    assert outside.read_text() == '{"step": 1}\n'


def test_summary_and_final_metrics(store: RunFolder) -> None:
    assert store.final_metrics() == {}
    store.write_summary({"loss": {"min": 0.1}})
    store.write_final_metrics({"test/acc": 0.5})
    assert store.final_metrics() == {"test/acc": 0.5}


def test_stop_is_requested_and_cleared(store: RunFolder) -> None:
    assert not store.stop_requested()
    store.request_stop()
    assert store.stop_requested()
    store.clear_stop()
    store.clear_stop()  # a missing one: no error
    assert not store.stop_requested()
