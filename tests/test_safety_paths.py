"""Crafted run folders (#23, items 1 and 4-6): nothing outside the runs root is deleted, written or
read, and no single entry hides or hangs the others. On a real server (the CSV route), through the
cache the page and its background builder keep, and on the pages (AppTest)."""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from runstore import run_folder, run_reads
from runstore.metrics import metric_cache
from runstore.run_folder import RunFolder
from tests.test_safety_damaged import good_run, page


def get(url: str, timeout: float = 20) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def crafted_index(run_dir: Path, part_name: str) -> None:
    """A metrics.cache/index.json valid in every way but one: its part is `part_name`, with a stale `end`."""
    ident = metric_cache.identity(run_dir / run_folder.RECORDS)
    assert ident is not None
    cache = run_dir / metric_cache.CACHE_DIR
    cache.mkdir()
    part = {"name": part_name, "start": 0, "end": 10, "rows": 1, "step_min": 1.0, "step_max": 1.0}
    doc = {"version": metric_cache.VERSION, **{k: ident[k] for k in ("dev", "ino", "head")}, "parts": [part]}
    (cache / "index.json").write_text(json.dumps(doc))


def big_run(root: Path, name: str, records: int = 6_000) -> Path:
    """A run whose metrics.jsonl is over metric_cache.MIN_GROWTH (what the background builder caches)."""
    d = good_run(root, name)
    pad = "x" * 40
    RunFolder(d).append_records([{"step": s, "wall": s, "train/loss": 1 / s, "note": pad} for s in range(4, records)])
    assert (d / run_folder.RECORDS).stat().st_size > metric_cache.MIN_GROWTH
    return d


def test_a_crafted_cache_index_never_deletes_outside_the_root_csv_route(served) -> None:  # noqa: ANN001
    srv, root = served
    victim = root.parent / "outside" / "victim.txt"
    victim.parent.mkdir()
    victim.write_text("keep me")
    d = good_run(root, "crafted-index")
    crafted_index(d, "../../../outside/victim.txt")
    assert (d / metric_cache.CACHE_DIR / "../../../outside/victim.txt").resolve() == victim.resolve()
    status, body = get(f"{srv.url}/api/runs/{d.name}/metrics.csv")
    assert status == 200 and body.decode().count("\n") == 4  # the header and the run's own three records
    assert victim.read_text() == "keep me"


def test_a_crafted_cache_index_never_deletes_outside_the_root_background_builder(tmp_path: Path) -> None:
    root = tmp_path / "runs"
    root.mkdir()
    victim = tmp_path / "outside" / "victim.txt"
    victim.parent.mkdir()
    victim.write_text("keep me")
    d = big_run(root, "crafted-big")
    crafted_index(d, "../../../outside/victim.txt")
    while metric_cache.sync(
        d, force=False, max_parts=1, threads=False
    ):  # as runstore/metrics/cache_builder.py calls it
        if metric_cache.sync(d)[-1].end == (d / run_folder.RECORDS).stat().st_size:
            break
    assert victim.read_text() == "keep me"
    parts = metric_cache.sync(d, force=True)
    assert parts and all(metric_cache.safe_files.plain_name(p.name) for p in parts)


def test_a_linked_metrics_cache_is_never_written_through(served) -> None:  # noqa: ANN001
    srv, root = served
    target = root.parent / "link-target"
    target.mkdir()
    # Made outside the root and moved in whole: a big run appearing in the root is cached by the server's
    # background builder at once, which made metrics.cache before the link could be (a FileExistsError in CI).
    staging = root.parent / "staging"
    staging.mkdir()
    made = big_run(staging, "linked-cache")
    (made / metric_cache.CACHE_DIR).symlink_to(target)
    d = made.rename(root / made.name)
    status, body = get(f"{srv.url}/api/runs/{d.name}/metrics.csv")
    assert status == 200 and body.decode().count("\n") == 6_000  # parsed without a cache
    assert metric_cache.sync(d, force=True) == []
    assert list(target.iterdir()) == []  # no *.arrow, index.json or overview.arrow written into the target


def test_a_symlink_loop_hides_no_run(tmp_path: Path) -> None:
    root = tmp_path / "runs"
    root.mkdir()
    good = good_run(root, "next-to-a-loop")
    (root / "selfloop").symlink_to(root / "selfloop")
    listed = {r.run_id: r for r in run_reads.list_runs(root)}
    assert listed[good.name].status["state"] == "finished"
    assert listed["selfloop"].damaged and "a symbolic link" in listed["selfloop"].status["message"]
    seen = {r.run_id for r in run_reads.list_runs(root, lambda d: RunFolder(d).status())}
    assert {good.name, "selfloop"} <= seen


def test_a_run_folder_that_is_a_link_is_shown_damaged_never_read(tmp_path: Path) -> None:
    root = tmp_path / "runs"
    root.mkdir()
    elsewhere = good_run(tmp_path, "outside-run")
    (root / "linked-run").symlink_to(elsewhere)
    listed = {r.run_id: r for r in run_reads.list_runs(root)}
    assert listed["linked-run"].damaged and listed["linked-run"].config == {}


def test_a_fifo_status_or_metrics_file_hangs_nothing(served) -> None:  # noqa: ANN001
    srv, root = served
    good = good_run(root, "fifo-neighbour")
    fifo = {}
    for name in (run_folder.STATUS, run_folder.RECORDS):
        fifo[name] = d = good_run(root, f"fifo-{name.split('.')[0]}")
        (d / name).unlink()
        os.mkfifo(d / name)
    t0 = time.monotonic()
    listed = {r.run_id: r for r in run_reads.list_runs(root)}
    assert time.monotonic() - t0 < 5
    message = listed[fifo[run_folder.STATUS].name].status["message"]
    assert "status.json: cannot be read (not a regular file" in message
    for _ in range(50):  # more requests than the server has threads
        status, body = get(f"{srv.url}/api/runs/{fifo[run_folder.RECORDS].name}/metrics.csv", timeout=5)
        assert status == 404 and b"not a regular file" in body
    status, body = get(f"{srv.url}/api/runs/{good.name}/metrics.csv", timeout=5)
    assert status == 200 and body.count(b"\n") == 4


def test_pages_render_next_to_fifos_loops_and_links(runs_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JAXDASH_WARM_WORKER", "0")
    good = good_run(runs_root, "good-next-to-hostile")
    fifo = good_run(runs_root, "fifo-status-page")
    (fifo / run_folder.STATUS).unlink()
    os.mkfifo(fifo / run_folder.STATUS)
    (runs_root / "selfloop").symlink_to(runs_root / "selfloop")
    for path in (None, "views/runs.py", "views/live.py", "views/detail.py"):
        at = page(path, run=good.name)  # no exception, no "Something went wrong"
        assert not [i.value for i in at.info if "No runs under" in i.value]


def test_metrics_linked_outside_are_neither_served_nor_plotted(served) -> None:  # noqa: ANN001
    srv, root = served
    secret = root.parent / "secret.jsonl"
    secret.write_text('{"step": 1, "train/loss": 12345.0}\n')
    d = good_run(root, "linked-metrics")
    (d / run_folder.RECORDS).unlink()
    (d / run_folder.RECORDS).symlink_to(secret)
    status, body = get(f"{srv.url}/api/runs/{d.name}/metrics.csv")
    assert status == 404 and b"12345" not in body
    records, _ = RunFolder(d).records()
    assert records == []  # what the pages plot
    assert metric_cache.identity(d / run_folder.RECORDS) is None
