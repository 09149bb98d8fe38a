"""A run's metrics as bounded numpy columns: what the dashboard server keeps in memory.

metrics.jsonl can hold millions of records; as a list of dicts that costs the server
gigabytes. Here every tag is a float column with a presence mask, the file is read in pieces
of a few MB (or, for a big catch-up, from the columnar cache `runstore.metrics.metric_cache` keeps next
to it), and once more than `max_rows` rows are held they are thinned the way the charts
downsample: per tag, the first, min, max and last point of each of equal-width step buckets, so
spikes and the whole run's extent survive and memory stays bounded whatever the file's length. The CSV
download (runstore/metrics/metric_csv.py) reads the cache itself, so it keeps every record. No Streamlit here.
"""

from __future__ import annotations

import math
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa

from runstore.metrics import metric_cache, metric_overview
from runstore.metrics.downsample import bucket_extremes

X_KEYS = ("step", "wall")
NOT_STORED = ("ts",)  # unix time of each record: no page plots it
MAX_TAGS = 256  # a file inventing a new key per line cannot grow the table sideways
READ_BYTES = 1 << 20  # one piece of the file parsed at a time (~7,000 records) when not from the cache


@dataclass(frozen=True)
class _Columns:
    """One immutable snapshot: readers take it whole, so an update in another thread never tears it."""

    values: dict[str, np.ndarray] = field(default_factory=dict)  # float64, NaN where absent or not a number
    present: dict[str, np.ndarray] = field(default_factory=dict)  # bool: the record had this key
    rows: int = 0


class MetricTable:
    """The records of one metrics.jsonl, read incrementally into bounded columns."""

    def __init__(self, max_rows: int = 20_000, use_cache: bool = True) -> None:
        self.max_rows = max_rows
        self.use_cache = use_cache  # metrics.cache/ next to the file (runstore.metrics.metric_cache)
        self.offset = 0  # bytes of the file consumed
        self.records = 0  # records read in all (held rows may be fewer)
        self._file: tuple[int, int] | None = None  # (device, inode): a replaced file is read again
        self._cache_end = 0  # bytes the on-disk cache covered when last synced
        self._cols = _Columns()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return self._cols.rows

    def update(self, run_dir: Path) -> MetricTable:
        """Read what was appended to run_dir/metrics.jsonl since the last call (all of it if it was replaced).

        Large catch-ups (a first open) come from the columnar cache, built on the way; small
        appends (a live run's last chunk) are parsed directly.
        """
        path = Path(run_dir) / "metrics.jsonl"
        with self._lock:
            try:
                st_ = os.stat(path)
            except OSError:
                st_ = None
            ident = (st_.st_dev, st_.st_ino) if st_ else None
            if ident != self._file or (st_ and st_.st_size < self.offset):  # new, deleted, replaced or truncated
                self._file, self.offset, self.records, self._cols, self._cache_end = ident, 0, 0, _Columns(), 0
            if st_ is None:
                return self
            if self.use_cache and self.offset == 0 and st_.st_size >= metric_cache.MIN_GROWTH:
                self._start_from_overview(Path(run_dir))
            if self.use_cache and st_.st_size - max(self._cache_end, self.offset) >= metric_cache.MIN_GROWTH:
                parts = metric_cache.sync(Path(run_dir))
                self._cache_end = parts[-1].end if parts else self._cache_end
                for part in parts:
                    if part.start == self.offset:  # parts are contiguous: follow them while they line up
                        self._append(metric_cache.read_part(Path(run_dir), part))
                        self.offset = part.end
            while self.offset < st_.st_size:
                data, offset = metric_cache.read_piece(path, self.offset, READ_BYTES)
                if offset == self.offset:
                    break  # only a partial last line: the rest comes later
                self.offset = offset
                self._append(metric_cache.parse(data))
        return self

    def _start_from_overview(self, run_dir: Path) -> None:
        """Start from the thinned columns the cache builder saved (runstore/metrics/metric_overview.py), if valid."""
        found = metric_overview.load(run_dir, self.max_rows)
        if found is not None:
            values, present, self.offset, self.records = found
            rows = len(next(iter(values.values()))) if values else 0
            self._cols, self._cache_end = _Columns(values, present, rows), self.offset

    def save_overview(self, run_dir: Path) -> bool:
        """Save the held columns as run_dir's overview (what a fresh table then starts from)."""
        with self._lock:
            c = self._cols
            return metric_overview.save(run_dir, c.values, c.present, self.offset, self.records, self.max_rows)

    def _append(self, table: pa.Table) -> None:
        n = table.num_rows
        if not n:
            return
        old = self._cols
        self.records += n
        keys = list(old.values)
        keys += [k for k in table.column_names if k not in old.values and k not in NOT_STORED][: MAX_TAGS - len(keys)]
        values, present = {}, {}
        for k in keys:
            if k in table.column_names:
                col = table.column(k)
                has = np.asarray(col.is_valid())
                vals = col.to_numpy(zero_copy_only=False).astype(float)
            else:
                has, vals = np.zeros(n, bool), np.full(n, np.nan)
            values[k] = np.concatenate([old.values.get(k, np.full(old.rows, np.nan)), vals])
            present[k] = np.concatenate([old.present.get(k, np.zeros(old.rows, bool)), has])
        cols = _Columns(values, present, old.rows + n)
        self._cols = _thin(cols, self.max_rows // 2) if cols.rows > self.max_rows else cols

    def tags(self) -> set[str]:
        """Metric names (x keys excluded)."""
        return set(self._cols.values) - set(X_KEYS)

    def ordered_tags(self) -> list[str]:
        """Metric names in the order they first appeared (x keys excluded)."""
        return [t for t in self._cols.values if t not in X_KEYS]

    def series(self, tag: str, x: str = "step") -> tuple[np.ndarray, np.ndarray]:
        """(x, y) of the rows that have both `tag` and `x`, in file order (as `components.series.extract`)."""
        c = self._cols
        if tag not in c.values or x not in c.values:
            return np.empty(0), np.empty(0)
        rows = c.present[tag] & c.present[x]
        return c.values[x][rows], c.values[tag][rows]

    def step_range(self) -> tuple[float, float] | None:
        """(first, last) step held (thinning keeps both ends), or None without steps."""
        steps = self._cols.values.get("step")
        steps = steps[np.isfinite(steps)] if steps is not None else np.empty(0)
        return (float(steps.min()), float(steps.max())) if steps.size else None

    def window(self, run_dir: Path, tag: str, x: str, lo: float, hi: float) -> tuple[np.ndarray, np.ndarray]:
        """(x, y) of `tag` for lo <= step <= hi: the held rows when nothing was thinned (or the whole
        run is asked for), else every record of the range from the columnar cache (full resolution).
        """
        c = self._cols
        full = self.step_range()
        thinned = self.records > c.rows
        if thinned and full is not None and (lo > full[0] or hi < full[1]):
            xs, ys = metric_cache.read_range(Path(run_dir), tag, x, lo, hi)
            if xs.size:
                return xs, ys
        if tag not in c.values or x not in c.values or "step" not in c.values:
            return np.empty(0), np.empty(0)
        step = c.values["step"]
        rows = c.present[tag] & c.present[x] & (step >= lo) & (step <= hi)
        return c.values[x][rows], c.values[tag][rows]

    def last(self, tag: str) -> float | None:
        """Latest value of `tag` (None if absent or not finite)."""
        c = self._cols
        if tag not in c.values:
            return None
        rows = np.flatnonzero(c.present[tag])
        if rows.size == 0:
            return None
        v = float(c.values[tag][rows[-1]])
        return v if math.isfinite(v) else None


def _thin(cols: _Columns, target: int) -> _Columns:
    """About `target` rows: per tag, first/min/max/last of equal-width step buckets (union over tags)."""
    tags = [t for t in cols.values if t not in X_KEYS] or list(cols.values)
    n_buckets = max(16, target // (4 * max(1, len(tags))))
    step = cols.values.get("step")
    position = np.arange(cols.rows, dtype=float)
    x = step if step is not None and np.isfinite(step).all() else position
    keep = [np.array([0, cols.rows - 1])]
    for tag in tags:
        rows = np.flatnonzero(cols.present[tag])
        keep.append(
            rows if rows.size <= 4 * n_buckets else rows[bucket_extremes(x[rows], cols.values[tag][rows], n_buckets)]
        )
    kept = np.unique(np.concatenate(keep))
    return _Columns(
        {k: v[kept] for k, v in cols.values.items()}, {k: v[kept] for k, v in cols.present.items()}, kept.size
    )
