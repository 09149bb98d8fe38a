"""A run's scalars for the pages: bounded columns over the columnar cache (`MetricTable`, read only where the
file grew), the records after a byte cursor (what the push stream appends), the one downsampler, the run's
start time and its CSV."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from runstore import safe_files
from runstore.metrics import metric_csv
from runstore.metrics.downsample import bucket_extremes
from runstore.metrics.metric_table import MAX_TAGS as MAX_TAGS
from runstore.metrics.metric_table import MetricTable
from runstore.run_folder import RunFolder


def metric_table() -> MetricTable:
    """An empty table that `MetricTable.update(run_dir)` fills and then keeps current (only new bytes read)."""
    return MetricTable()


def scalars(run_dir: Path) -> MetricTable:
    """The run's scalars as bounded columns, read now (from its columnar cache where it has one)."""
    return MetricTable().update(Path(run_dir))


def records_size(run_dir: Path) -> int:
    """The byte length of the run's records so far (a cursor past it means the file was replaced)."""
    return RunFolder(run_dir).records_size()


def records_after(run_dir: Path, cursor: int, max_bytes: int) -> tuple[list[dict[str, Any]], int]:
    """The whole records after byte `cursor`, at most `max_bytes` of them, and the cursor after them: each
    record is read once, a torn last line is waited for."""
    return RunFolder(run_dir).records(cursor, max_bytes=max_bytes)


def downsample(x: np.ndarray, y: np.ndarray, n_buckets: int) -> np.ndarray:
    """The indices to keep of a series: the first, min, max and last point of each of `n_buckets` buckets."""
    return bucket_extremes(x, y, n_buckets)


def start_time(run_dir: Path) -> float | None:
    """The run's start in unix seconds (its first record's ts - wall), for a wall-time x axis; None without one."""
    try:
        records, _ = records_after(run_dir, 0, 4096)
    except OSError:
        return None
    for rec in records:
        ts, wall = rec.get("ts"), rec.get("wall")
        if isinstance(ts, int | float) and isinstance(wall, int | float):
            return float(ts) - float(wall)
    return None


def csv_problem(run_dir: Path) -> str | None:
    """Why the run has no CSV to serve, as the rest of a sentence after its name (no records yet, or its records
    file is not a regular file); else None."""
    records = RunFolder(run_dir).records_path
    if not records.exists():
        return " has logged no metrics yet (no metrics.jsonl)"
    if not safe_files.is_regular(records):
        return f": metrics.jsonl is {safe_files.NOT_REGULAR}; replace it with the run's own file"
    return None


def csv_chunks(run_dir: Path) -> Iterator[bytes]:
    """Every record of the run as CSV, in chunks, as it is written (a plain iterator, for a worker thread)."""
    return metric_csv.iter_csv(Path(run_dir))


def csv_bytes(run_dir: Path) -> bytes:
    """Every record of the run as one CSV (for a download button: built when clicked)."""
    return metric_csv.metrics_csv(Path(run_dir))
