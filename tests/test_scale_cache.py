"""The columnar metrics cache: built once, extended incrementally, thrown away when the file is replaced."""

from __future__ import annotations

import csv
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from runstore import run_folder
from runstore.metrics import metric_cache
from runstore.metrics.metric_csv import write_csv
from runstore.metrics.metric_table import MetricTable
from runstore.run_folder import RunFolder


def write(run_dir: Path, start: int, stop: int) -> None:
    with open(run_dir / run_folder.RECORDS, "a") as f:
        for i in range(start, stop):
            rec = {"step": i, "wall": i * 0.01, "ts": 1.7e9 + i, "train/loss": 1.0 / i}
            if i % 1000 == 0:
                rec["test/acc"] = 0.5
            f.write(json.dumps(rec) + "\n")


def test_cache_covers_the_file_in_parts_and_a_fresh_table_reads_it_instead_of_json(tmp_path: Path) -> None:
    write(tmp_path, 1, 120_001)
    parts = metric_cache.sync(tmp_path, force=True)
    assert len(parts) >= 2 and parts[0].start == 0 and parts[-1].end == (tmp_path / run_folder.RECORDS).stat().st_size
    assert all(a.end == b.start for a, b in zip(parts, parts[1:], strict=False))
    assert sum(p.rows for p in parts) == 120_000
    table = MetricTable().update(tmp_path)
    assert table.records == 120_000 and table.last("train/loss") == 1.0 / 120_000
    assert table.tags() == {"train/loss", "test/acc"}
    assert list(table.series("test/acc")[0]) == list(range(1000, 120_001, 1000))


def test_only_the_last_part_is_rewritten_as_the_file_grows(tmp_path: Path) -> None:
    write(tmp_path, 1, 50_001)
    first = metric_cache.sync(tmp_path, force=True)
    write(tmp_path, 50_001, 60_001)
    again = metric_cache.sync(tmp_path, force=True)
    assert again[:-1] == first[:-1] and again[-1].end > first[-1].end
    names = {p.name for p in again} | {"index.json"}
    assert {p.name for p in (tmp_path / metric_cache.CACHE_DIR).iterdir()} == names  # the old last part is gone


def test_non_finite_values_bad_lines_and_strings_read_as_the_file_says(tmp_path: Path) -> None:
    RunFolder(tmp_path).append_records([{"step": 1, "train/loss": math.nan}, {"step": 2, "train/loss": math.inf}])
    with open(tmp_path / run_folder.RECORDS, "a") as f:
        f.write('not json\n{"step": 3, "train/loss": -1.5, "note": "text"}\n')
    RunFolder(tmp_path).append_records([{"step": 4, "train/loss": -math.inf}])
    table = metric_cache.parse((tmp_path / run_folder.RECORDS).read_bytes())
    loss = table.column("train/loss").to_numpy(zero_copy_only=False)
    assert np.isnan(loss[0]) and loss[1] == math.inf and loss[2] == -1.5 and loss[3] == -math.inf
    assert table.num_rows == 4 and "ts" not in table.column_names


def test_a_replaced_file_throws_the_cache_away(tmp_path: Path) -> None:
    write(tmp_path, 1, 20_001)
    metric_cache.sync(tmp_path, force=True)
    new = tmp_path / "new.jsonl"
    new.write_text('{"step": 1, "train/loss": 9.0}\n')
    os.replace(new, tmp_path / run_folder.RECORDS)
    (part,) = metric_cache.sync(tmp_path, force=True)
    assert part.rows == 1
    assert MetricTable().update(tmp_path).last("train/loss") == 9.0


def test_zoom_reads_the_range_at_full_resolution(tmp_path: Path) -> None:
    write(tmp_path, 1, 200_001)
    table = MetricTable(max_rows=20_000).update(tmp_path)
    assert len(table) < 20_000  # thinned overview
    x, y = table.window(tmp_path, "train/loss", "step", 50_000, 52_000)
    assert list(x) == list(range(50_000, 52_001)) and y[0] == 1.0 / 50_000
    wall, _ = table.window(tmp_path, "train/loss", "wall", 50_000, 50_010)
    assert wall[0] == 500.0 and wall.size == 11


def test_a_read_only_run_folder_is_read_without_a_cache(tmp_path: Path) -> None:
    write(tmp_path, 1, 120_001)
    tmp_path.chmod(0o555)
    try:
        if os.access(tmp_path, os.W_OK):  # root ignores the mode
            return
        table = MetricTable().update(tmp_path)
        assert table.records == 120_000 and not (tmp_path / metric_cache.CACHE_DIR).exists()
    finally:
        tmp_path.chmod(0o755)


def test_csv_is_written_to_a_file_with_every_record(tmp_path: Path) -> None:
    write(tmp_path, 1, 5_001)
    out = tmp_path / "out.csv"
    assert write_csv(tmp_path, out) == 5_000
    lines = out.read_text().splitlines()
    assert lines[0] == "step,wall,ts,train/loss,test/acc" and len(lines) == 5_001


def test_csv_holds_every_record_as_written_including_non_finite_and_missing_keys(tmp_path: Path) -> None:
    records = [{"step": i, "wall": i * 0.5, "ts": 1.7e9 + i * 1e-3, "train/loss": 1.0 / i} for i in range(1, 40_001)]
    records[5]["train/loss"], records[6]["train/loss"] = math.nan, -math.inf
    records[9]["test/acc"] = 0.25  # a key first seen in the tenth record
    RunFolder(tmp_path).append_records(records)
    out = tmp_path / "out.csv"
    assert write_csv(tmp_path, out) == len(records)
    with open(out, newline="") as f:
        header, *rows = list(csv.reader(f))
    assert header == ["step", "wall", "ts", "train/loss", "test/acc"] and len(rows) == len(records)
    for rec, row in zip(records, rows, strict=True):
        for key, cell in zip(header, row, strict=True):
            want = rec.get(key)
            if want is None:
                assert cell == ""
            elif math.isnan(want):
                assert math.isnan(float(cell))
            else:
                assert float(cell) == want  # the shortest repr round-trips: no precision lost
    assert rows[0][:3] == ["1", "0.5", "1700000000.001"]  # integers without a decimal point


def test_csv_of_a_read_only_run_folder_is_parsed_without_a_cache(tmp_path: Path) -> None:
    write(tmp_path, 1, 30_001)
    tmp_path.chmod(0o555)
    try:
        if os.access(tmp_path, os.W_OK):  # root ignores the mode
            return
        out = tmp_path.parent / f"{tmp_path.name}.csv"
        assert write_csv(tmp_path, out) == 30_000 and len(out.read_text().splitlines()) == 30_001
        assert not (tmp_path / metric_cache.CACHE_DIR).exists()
    finally:
        tmp_path.chmod(0o755)


MEASURE = """
import json, sys
from pathlib import Path
from runstore.metrics import metric_csv
def mb(key):
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) for l in f if l.startswith(key + ":")) / 1024
metric_csv.write_csv(Path(sys.argv[2]), Path(sys.argv[2]) / "out.csv")  # Arrow's first use
base = mb("VmRSS")
rows = metric_csv.write_csv(Path(sys.argv[1]), Path(sys.argv[1]) / "out.csv")
print(json.dumps({"rows": rows, "growth_mb": mb("VmHWM") - base}))
"""


def test_csv_of_a_big_cached_run_costs_a_fraction_of_its_file_in_memory(tmp_path: Path) -> None:
    """400,000 records (57 MB of JSON; ~500 MB as the dicts the old download built): the CSV grows the
    process by well under half the file (one cached part at a time: ~16 MB seen), past what Arrow's CSV
    writer and allocator take at their first use (a small run's CSV is written first)."""
    from benchmarks.scale import write_metrics

    (tmp_path / "small").mkdir()
    write_metrics(tmp_path / "small" / run_folder.RECORDS, 100)
    write_metrics(tmp_path / run_folder.RECORDS, 400_000)
    for run_dir in (tmp_path, tmp_path / "small"):
        metric_cache.sync(run_dir, force=True)  # as the dashboard's background builder leaves a finished run
    size_mb = (tmp_path / run_folder.RECORDS).stat().st_size / 2**20
    repo = Path(__file__).resolve().parent.parent
    done = subprocess.run(
        [sys.executable, "-c", MEASURE, str(tmp_path), str(tmp_path / "small")],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    )
    got = json.loads(done.stdout)
    assert got["rows"] == 400_000
    assert got["growth_mb"] < 0.5 * size_mb, (got, size_mb)
