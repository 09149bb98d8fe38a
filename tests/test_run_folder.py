"""runstore.run_folder: the records reader's loader contract and RunFolder's reads and writes, on real files
written by the run store's own writer (runstore.atomic)."""

from __future__ import annotations

import os
from pathlib import Path

from runstore import atomic, launch_files, run_folder, run_store
from runstore.run_folder import RecordsReader, RunFolder


def _records(n: int, start: int = 0) -> list[dict]:
    return [{"step": s, "wall": 0.0, "ts": 1.0, "train/loss": 1.0 / (s + 1)} for s in range(start, start + n)]


def test_every_record_is_yielded_once_and_a_torn_tail_waits_for_its_newline(tmp_path: Path) -> None:
    reader = RecordsReader(tmp_path)
    assert reader.read_new() == []  # no metrics.jsonl yet
    RunFolder(tmp_path).append_records(_records(3))
    assert [r["step"] for r in reader.read_new()] == [0, 1, 2]
    assert reader.read_new() == []
    with open(tmp_path / run_folder.RECORDS, "a") as f:  # a writer half way through a line
        f.write('{"step": 3, "train/lo')
    assert reader.read_new() == []
    with open(tmp_path / run_folder.RECORDS, "a") as f:
        f.write('ss": 0.25}\n')
    assert [r["step"] for r in reader.read_new()] == [3]
    RunFolder(tmp_path).append_records(_records(2, start=4))
    assert [r["step"] for r in reader.read_new()] == [4, 5]


def test_what_was_read_is_never_read_again(tmp_path: Path) -> None:
    RunFolder(tmp_path).append_records(_records(2))
    reader = RecordsReader(tmp_path)
    assert len(reader.read_new()) == 2
    path = tmp_path / run_folder.RECORDS
    data = path.read_bytes()
    with open(path, "r+b") as f:  # the bytes already read change in place (same file, same size)
        f.write(data.replace(b'"step": 0', b'"step": 9'))
    RunFolder(tmp_path).append_records(_records(1, start=2))
    assert [r["step"] for r in reader.read_new()] == [2]
    assert reader.offset == path.stat().st_size


def test_a_replaced_file_is_read_from_its_start(tmp_path: Path) -> None:
    """A resume cutting records past its checkpoint writes a new file: the reader starts over on it."""
    RunFolder(tmp_path).append_records(_records(5))
    reader = RecordsReader(tmp_path)
    assert len(reader.read_new()) == 5
    tmp = tmp_path / "new.jsonl"
    tmp.write_text(atomic.metric_lines(_records(3)) + atomic.metric_lines(_records(1, start=10)))
    os.replace(tmp, tmp_path / run_folder.RECORDS)  # a new inode, as long as the old file or not
    assert [r["step"] for r in reader.read_new()] == [0, 1, 2, 10]
    assert reader.read_new() == []
    RunFolder(tmp_path).replace_records(_records(1, start=7))  # the writers' one way to rewrite it
    assert [r["step"] for r in reader.read_new()] == [7]


def test_run_folder_reads_and_writes_through_the_run_store(tmp_path: Path) -> None:
    run_dir = run_store.new_run_dir(tmp_path, "regression", "r")
    folder = RunFolder(run_dir)
    assert not folder.has_config() and folder.config({}) == {} and not folder.has_checkpoint()
    RunFolder(run_dir).write_config("regression", {"lr": 0.1})
    assert folder.has_config() and folder.checked_config()["config"] == {"lr": 0.1}
    folder.replace_config({**folder.config(), "sweep": {"trial": 3}})
    assert run_store.read_json(run_dir / run_folder.CONFIG)["sweep"] == {"trial": 3}
    folder.request_stop()
    assert folder.stop_requested() and RunFolder(run_dir).stop_requested()
    folder.clear_stop()
    assert not folder.stop_requested()
    (folder.checkpoints / "120.orbax-checkpoint-tmp-1").mkdir(parents=True)
    assert not folder.has_checkpoint()  # a save in progress is not a checkpoint
    (folder.checkpoints / "100").mkdir()
    assert folder.has_checkpoint()
    launch_files.write_launch(run_dir, {"pid": 1, "launched": 1.0})
    assert folder.has_launch() and folder.log_path == launch_files.process_log(run_dir)
    RunFolder(run_dir).append_records(_records(2))
    records, end = folder.records()
    assert [r["step"] for r in records] == [0, 1] and end == folder.records_size()
    folder.write_final_metrics({"test/acc": 0.5})
    assert run_store.read_json(run_dir / run_folder.FINAL_METRICS) == {"test/acc": 0.5}


def test_final_metrics_live_in_one_file_and_an_old_run_folder_still_reads(tmp_path: Path) -> None:
    """final_metrics.json beside config.json is the one place; a run folder from before #38, whose store writer
    kept them under artifacts/ only, reads the same; a folder with neither reads {}."""
    new, old, none = (RunFolder(tmp_path / n) for n in ("new", "old", "none"))
    for folder in (new, old, none):
        folder.artifacts.mkdir(parents=True)
    new.write_final_metrics({"test/acc": 0.5})
    assert sorted(p.name for p in new.path.rglob("*.json")) == [run_folder.FINAL_METRICS]
    assert new.final_metrics() == {"test/acc": 0.5}
    atomic.atomic_write_json(old.artifacts / run_folder.FINAL_METRICS, {"test/acc": 0.25})
    assert old.final_metrics() == {"test/acc": 0.25}
    assert none.final_metrics() == {}
