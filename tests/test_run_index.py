"""The run index: built from real run folders (runstore's writers and a real client run), kept current by
re-reading only what changed, rebuilt with one log line when damaged, one writer, readers never waiting."""

from __future__ import annotations

import logging
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

import jaxdash
from runstore import index_keeper, index_reader, run_folder, run_index, run_notes, run_store
from runstore.run_folder import RunFolder


def _run(root: Path, name: str, lr: float, accs: list[float], state: str = "finished", **status) -> Path:
    d = run_store.new_run_dir(root, "mnist", name)
    RunFolder(d).write_config("mnist", {"lr": lr}, name=name, task_spec="mnist")
    RunFolder(d).write_status(state=state, **status)
    RunFolder(d).append_records([{"step": i, "wall": 0.0, "ts": 0.0, "test/acc": a} for i, a in enumerate(accs)])
    return d


def _names(root: Path, query: str = "") -> set[str]:
    return {r.name for r in index_reader.search(root, query)}


def test_index_holds_engine_and_client_runs_read_from_their_folders(tmp_path: Path) -> None:
    engine = _run(tmp_path, "engine", 0.01, [0.2, 0.9, 0.7])
    RunFolder(engine).write_final_metrics({"test/acc": 0.7, "train/loss": 0.3})
    run = jaxdash.init(project="proj", name="client", config={"model": {"hidden": 32}, "lr": 0.1}, tags=["baseline"],
                       notes="first try", runs_root=tmp_path, wandb="disabled", tensorboard=False)  # fmt: skip
    for i, loss in enumerate([3.0, 1.0, 2.0]):
        run.log({"loss": loss}, step=i)
    run.summary["best"] = "ckpt-2"
    run.finish()
    assert run_index.update(tmp_path).read == 2
    (client,) = jaxdash.Api({"runs": tmp_path}).runs(filter='tags contains "baseline" and config.model.hidden = 32')
    assert (client.name, client.state, client.kind, client.project) == ("client", "finished", "client", "proj")
    assert client.config == {"model": {"hidden": 32}, "lr": 0.1} and client.notes == "first try"
    assert client.summary["loss"] == 2.0 and client.summary["best"] == "ckpt-2"
    assert client.summary_stats["loss"] == {"last": 2.0, "min": 1.0, "max": 3.0}
    (eng,) = jaxdash.Api({"runs": tmp_path}).runs(filter='kind = "engine"')
    assert eng.summary_stats["test/acc"] == {"last": 0.7, "min": 0.2, "max": 0.9}
    assert eng.summary["train/loss"] == 0.3  # from final_metrics.json alone
    assert [r.name for r in jaxdash.Api({"runs": tmp_path}).runs(order="-summary.test/acc.max")] == ["engine", "client"]


def test_update_reads_only_changed_folders_and_sees_a_new_run_at_once(tmp_path: Path) -> None:
    dirs = [_run(tmp_path, f"r{i}", 0.1 * i, [0.5]) for i in range(5)]
    assert run_index.update(tmp_path).read == 5
    again = run_index.update(tmp_path)
    assert (again.read, again.kept) == (0, 5)
    RunFolder(dirs[2]).append_records([{"step": 9, "wall": 0.0, "ts": 0.0, "test/acc": 0.99}])
    grew = run_index.update(tmp_path)
    assert (grew.read, grew.kept) == (1, 4)
    assert _names(tmp_path, "summary.test/acc.max > 0.9") == {"r2"}
    con = sqlite3.connect(run_index.index_path(tmp_path))
    (offset,) = con.execute("SELECT rec_offset FROM runs WHERE name = 'r2'").fetchone()
    con.close()
    assert offset == RunFolder(dirs[2]).records_size()  # the next read starts where this one ended
    _run(tmp_path, "late", 0.5, [0.1])
    assert run_index.update(tmp_path).read == 1 and _names(tmp_path, 'name = "late"') == {"late"}
    shutil.rmtree(dirs[0])
    assert run_index.update(tmp_path).removed == 1 and "r0" not in _names(tmp_path)


def test_a_running_run_whose_process_died_is_seen_as_crashed_without_a_file_change(tmp_path: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    _run(tmp_path, "live", 0.1, [0.5], state="running", pid=proc.pid, host=socket.gethostname())
    run_index.update(tmp_path)
    assert _names(tmp_path, 'state = "running"') == {"live"}
    proc.stdin.close()
    proc.wait(timeout=30)
    run_index.update(tmp_path)
    assert _names(tmp_path, 'state = "crashed"') == {"live"}


def _garbage(path: Path) -> None:
    path.write_bytes(b"not a database at all" * 100)


def _truncated(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 3])


def _old_schema(path: Path) -> None:
    con = sqlite3.connect(path)
    con.execute("UPDATE meta SET value = '0' WHERE key = 'schema'")
    con.commit()
    con.close()


def _link(path: Path) -> None:
    target = path.parent.parent / "elsewhere.txt"
    target.write_text("keep me")
    path.unlink()
    path.symlink_to(target)


DAMAGE = {"garbage": (_garbage, "damaged"), "truncated": (_truncated, "damaged"), "old schema": (_old_schema, "schema"),
          "deleted": (Path.unlink, "missing"), "a link": (_link, "not a regular file")}  # fmt: skip


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_damaged_or_missing_index_is_rebuilt_with_one_log_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, damage: str
) -> None:
    root = tmp_path / "runs"
    for i in range(3):
        _run(root, f"r{i}", 0.1, [0.5])
    run_index.update(root)
    run_index.update(root)  # a checkpoint of the WAL would not matter: the damage is to the main file
    con = sqlite3.connect(run_index.index_path(root))
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    hurt, why = DAMAGE[damage]
    hurt(run_index.index_path(root))
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="jaxdash"):
        assert run_index.update(root).read == 3
    lines = [r.getMessage() for r in caplog.records if "run index" in r.getMessage()]
    assert len(lines) == 1 and why in lines[0] and "\n" not in lines[0], lines
    assert _names(root) == {"r0", "r1", "r2"}
    if damage == "a link":
        assert (tmp_path / "elsewhere.txt").read_text() == "keep me"  # the link was replaced, never written through


def test_a_damaged_run_folder_is_indexed_as_damaged(tmp_path: Path) -> None:
    _run(tmp_path, "good", 0.1, [0.5])
    bad = run_store.new_run_dir(tmp_path, "mnist", "bad")
    RunFolder(bad).config_path.write_text('{"run_id": "bad", "task": ')
    run_index.update(tmp_path)
    (damaged,) = index_reader.search(tmp_path, 'state = "damaged"')
    assert damaged.kind == "damaged" and run_folder.CONFIG in damaged.message


def test_one_writer_at_a_time_and_readers_never_wait_for_it(tmp_path: Path) -> None:
    for i in range(3):
        _run(tmp_path, f"r{i}", 0.1, [0.5])
    with run_index.writer_lock(tmp_path) as mine:
        assert mine
        assert run_index.update(tmp_path) is None  # another writer holds it: this caller only reads
    run_index.update(tmp_path)
    writer = run_index.connect(run_index.index_path(tmp_path))
    writer.execute("BEGIN IMMEDIATE")
    writer.execute("DELETE FROM runs")  # a write in progress, not committed
    started = time.perf_counter()
    assert _names(tmp_path) == {"r0", "r1", "r2"}  # the last committed index, read at once
    assert time.perf_counter() - started < 0.9  # below the reader's 1 s busy timeout: it never waited
    writer.execute("ROLLBACK")
    writer.close()


def test_keeper_thread_brings_a_new_run_into_the_index(tmp_path: Path) -> None:
    _run(tmp_path, "first", 0.1, [0.5])
    try:
        assert index_keeper.keep_current(tmp_path, wait_s=30, every_s=0.1)
        assert _names(tmp_path) == {"first"}
        _run(tmp_path, "second", 0.2, [0.6])
        deadline = time.monotonic() + 30
        while "second" not in _names(tmp_path):  # the keeper's next update, whenever it lands
            assert time.monotonic() < deadline, "the keeper never indexed the new run"
            time.sleep(0.05)
    finally:
        index_keeper.stop_all()
    assert os.path.exists(run_index.index_path(tmp_path))


def test_a_rename_within_the_folders_clock_tick_is_still_seen(tmp_path: Path) -> None:
    d = _run(tmp_path, "tick", 0.1, [0.5])
    run_index.update(tmp_path)
    before = os.stat(d)
    run_notes.write(d, run_notes.make("", ["late-tag"], ""))  # replaced by a rename...
    os.utime(d, ns=(before.st_atime_ns, before.st_mtime_ns))  # ...within the same tick: the folder's mtime stays
    assert run_index.update(tmp_path).read == 1
    assert _names(tmp_path, 'tags contains "late-tag"') == {"tick"}
