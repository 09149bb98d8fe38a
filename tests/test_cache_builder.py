"""Metrics caches built ahead of time: a run that ended is cached by the server with no page open."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import numpy as np

from runstore import run_folder, run_store, run_watch
from runstore.metrics import cache_builder, metric_cache, metric_overview
from runstore.metrics.metric_table import MetricTable
from runstore.run_folder import RunFolder


def make_run(root: Path, name: str, state: str, records: int) -> Path:
    d = root / name
    d.mkdir()
    RunFolder(d).write_config("regression", {"lr": 0.1})
    RunFolder(d).write_status(state=state, pid=os.getpid(), host=os.uname().nodename)
    append(d, 1, records + 1)
    return d


def append(d: Path, start: int, stop: int) -> None:
    with open(d / run_folder.RECORDS, "a") as f:
        f.writelines(
            json.dumps({"step": i, "wall": i * 0.01, "train/loss": 1.0 / i}) + "\n" for i in range(start, stop)
        )


def covered(d: Path) -> int:
    """Bytes of metrics.jsonl the cache on disk covers (read from its index, building nothing)."""
    doc = run_store.read_json(d / metric_cache.CACHE_DIR / "index.json", {})
    parts = doc.get("parts", []) if isinstance(doc, dict) else []
    return parts[-1]["end"] if parts else 0


def wait_for(predicate, timeout_s: float = 60.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return predicate()


def test_finished_runs_are_cached_by_the_watcher_without_a_page(tmp_path: Path) -> None:
    done = make_run(tmp_path, "done", "finished", 80_000)  # ~5.6 MB, two parts: bigger than MIN_BYTES
    live = make_run(tmp_path, "live", "running", 50_000)  # ~3.5 MB: one part
    small = make_run(tmp_path, "small", "finished", 100)
    run_watch.Watcher(tmp_path)
    size = (done / run_folder.RECORDS).stat().st_size
    assert size > cache_builder.MIN_BYTES
    assert wait_for(lambda: covered(done) == size)
    assert wait_for(lambda: covered(live) == (live / run_folder.RECORDS).stat().st_size)  # grown past MIN_GROWTH
    assert not (small / metric_cache.CACHE_DIR).exists()  # a page parses a small file itself

    append(live, 50_001, 51_001)  # a last chunk too small for an active run's rebuild
    before = covered(live)
    RunFolder(live).write_status(state="finished")
    size = (live / run_folder.RECORDS).stat().st_size
    assert size - before < metric_cache.MIN_GROWTH
    assert wait_for(lambda: covered(live) == size)  # the run ended: its whole file is cached
    table = MetricTable().update(live)
    assert table.records == 51_000 and table.last("train/loss") == 1.0 / 51_000


def test_builder_thread_runs_at_the_lowest_priority_and_lets_pages_in_between_parts(tmp_path: Path) -> None:
    d = make_run(tmp_path, "big", "finished", 150_000)  # ~10 MB: three parts
    b = cache_builder.builder()
    b.submit(d)
    assert b.wait_idle(60)
    thread = next(t for t in threading.enumerate() if t.name == "metrics-cache-builder")
    assert os.getpriority(os.PRIO_PROCESS, thread.native_id) == cache_builder.NICE
    parts = metric_cache.sync(d)
    assert len(parts) >= 2 and parts[-1].end == (d / run_folder.RECORDS).stat().st_size
    assert b.built[d] == parts[-1].end
    # One part per call (the run's lock is free between parts): a big append is covered in steps.
    append(d, 150_001, 250_001)
    one = metric_cache.sync(d, force=True, max_parts=1)
    assert parts[-1].end < one[-1].end < (d / run_folder.RECORDS).stat().st_size


def test_a_fresh_table_starts_from_the_saved_overview_and_reads_only_what_came_after(tmp_path: Path) -> None:
    d = make_run(tmp_path, "big", "finished", 150_000)
    size = (d / run_folder.RECORDS).stat().st_size
    assert cache_builder.build(d) == size and metric_overview.covered(d) == size
    built = MetricTable().update(d)
    for part in (d / metric_cache.CACHE_DIR).glob("0*.arrow"):
        part.unlink()  # a table that still reads the run must be reading the overview
    fresh = MetricTable().update(d)
    assert fresh.records == 150_000 and len(fresh) == len(built) < 20_000
    for tag in ("train/loss", "wall"):
        assert np.array_equal(fresh.series(tag)[1], built.series(tag)[1])
    assert fresh.step_range() == (1.0, 150_000.0)
    append(d, 150_001, 150_101)  # the file grew after the overview: only the new lines are parsed
    assert MetricTable().update(d).records == 150_100 and MetricTable().update(d).last("train/loss") == 1.0 / 150_100


def test_an_overview_of_a_replaced_file_is_ignored(tmp_path: Path) -> None:
    d = make_run(tmp_path, "big", "finished", 60_000)
    cache_builder.build(d)
    assert metric_overview.load(d, 20_000) is not None and metric_overview.load(d, 10_000) is None
    new = d / "new.jsonl"
    new.write_text('{"step": 1, "train/loss": 9.0}\n' * 10_000)
    os.replace(new, d / run_folder.RECORDS)
    assert metric_overview.load(d, 20_000) is None
    table = MetricTable().update(d)
    assert table.records == 10_000 and table.last("train/loss") == 9.0
