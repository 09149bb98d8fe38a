"""A run's metrics as bounded numpy columns: what the dashboard server keeps in memory.

metrics.jsonl can hold millions of records; as a list of dicts that costs the server
gigabytes. Here the file is read in pieces of a few MB (or, for a big catch-up, from the columnar
cache `runstore.metrics.metric_cache` keeps next to it) into one shared row table (each record's
number, step and wall time) and, per key, the numbers of the records that had it and their values:
a key logged at 10 of a million steps costs 10 points, whatever the other keys do (as W&B keeps a
history per key). Each key's points are thinned the way the charts downsample once it holds more than
its share of `max_rows` (the first, min, max and last point of each of equal-width step buckets), so
spikes and the whole run's extent survive and memory stays bounded whatever the file's length and
however many keys it has. The CSV download (runstore/metrics/metric_csv.py) reads the cache itself,
so it keeps every record. No Streamlit here.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa

from runstore import line_reader
from runstore.metrics import metric_cache, metric_overview
from runstore.metrics.downsample import bucket_extremes
from runstore.run_folder import RunFolder

X_KEYS = ("step", "wall")
NOT_STORED = ("ts",)  # unix time of each record: no page plots it
# Keys kept per run (W&B keeps every key; so does this table, up to this bound). It protects the server from
# a file that invents a new key per line; a key past it is counted in `dropped_keys` and named by the page.
MAX_TAGS = metric_cache.MAX_TAGS
# Points a key keeps: its share of max_rows (a few keys: as many rows as before), else of POINT_BUDGET (1,000
# keys: 1,000 points each, more than a live chart draws), never fewer than MIN_KEY_POINTS. A table then holds
# at most ~1-2 M points (16 bytes each, their rows 26): under ~90 MB however many keys, ~1 MB for a few.
POINT_BUDGET = 1_000_000
MIN_KEY_POINTS = 100
READ_BYTES = 1 << 20  # one piece of the file parsed at a time (~7,000 records) when not from the cache
EMPTY_I, EMPTY_F = np.empty(0, np.int64), np.empty(0)


@dataclass(frozen=True)
class _Columns:
    """One immutable snapshot: readers take it whole, so an update in another thread never tears it.

    rid: the held records' numbers (0 = the file's first record), ascending; x / x_has: their step and wall
    (NaN where absent or not a number) and whether the record had them. points: {key: (record numbers,
    values)}, in the order the keys first appeared, values NaN where not a finite number.
    """

    rid: np.ndarray = field(default_factory=lambda: EMPTY_I)
    x: dict[str, np.ndarray] = field(default_factory=lambda: {k: EMPTY_F for k in X_KEYS})
    x_has: dict[str, np.ndarray] = field(default_factory=lambda: {k: np.empty(0, bool) for k in X_KEYS})
    points: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)

    @property
    def rows(self) -> int:
        return int(self.rid.size)

    def column(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """(record numbers, values) of a key or an x key."""
        if name in X_KEYS:
            has = self.x_has[name]
            return self.rid[has], self.x[name][has]
        return self.points.get(name, (EMPTY_I, EMPTY_F))


def _values(col: pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    """(values, present) of one column of a parsed piece."""
    return col.to_numpy(zero_copy_only=False).astype(float), np.asarray(col.is_valid())


def _at(c: _Columns, rid: np.ndarray, name: str) -> tuple[np.ndarray, np.ndarray]:
    """(values, present) of `name` (a key or an x key) at the records `rid` (each a held row)."""
    if name in X_KEYS:
        pos = np.searchsorted(c.rid, rid)
        return c.x[name][pos], c.x_has[name][pos]
    at, vals = c.column(name)
    if not at.size:
        return np.full(rid.size, np.nan), np.zeros(rid.size, bool)
    pos = np.minimum(np.searchsorted(at, rid), at.size - 1)
    has = at[pos] == rid
    return np.where(has, vals[pos], np.nan), has


class MetricTable:
    """The records of one metrics.jsonl, read incrementally into bounded columns."""

    def __init__(self, max_rows: int = 20_000, use_cache: bool = True) -> None:
        self.max_rows = max_rows
        self.use_cache = use_cache  # metrics.cache/ next to the file (runstore.metrics.metric_cache)
        self.offset = 0  # bytes of the file consumed
        self.records = 0  # records read in all (held rows may be fewer)
        self._file: tuple[int, int] | None = None  # (device, inode): a replaced file is read again
        self.changes = 0  # how many updates changed the held columns: a figure built from them is current while equal
        self._cache_end = 0  # bytes the on-disk cache covered when last synced
        self._reset()
        self._lock = threading.Lock()

    def _reset(self) -> None:
        self._cols = _Columns()
        self._thinned = False  # a key's points were thinned (its full resolution is in the cache)
        self._row_limit = self.max_rows  # rows held before those no key refers to are let go
        self._dropped: set[str] = set()  # keys past MAX_TAGS

    def __len__(self) -> int:
        return self._cols.rows

    @property
    def dropped_keys(self) -> int:
        """How many keys past MAX_TAGS were not kept (0 for any run of up to MAX_TAGS keys)."""
        return sum(k not in self._cols.points for k in self._dropped)

    def update(self, run_dir: Path) -> MetricTable:
        """Read what was appended to run_dir/metrics.jsonl since the last call (all of it if it was replaced).

        Large catch-ups (a first open) come from the columnar cache, built on the way; small
        appends (a live run's last chunk) are parsed directly.
        """
        with self._lock:
            before = self._cols
            self._update(Path(run_dir))
            self.changes += self._cols is not before  # snapshots are immutable: a new one is a change
        return self

    def _update(self, run_dir: Path) -> None:
        path = RunFolder(run_dir).records_path
        st_ = line_reader.stat(path)
        if line_reader.replaced(self._file, st_, self.offset):  # new, deleted, replaced or truncated
            self._file, self.offset, self.records, self._cache_end = line_reader.file_key(st_), 0, 0, 0
            self._reset()
        if st_ is None:
            return
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
            data, offset = line_reader.read_lines(path, self.offset, READ_BYTES)
            if offset == self.offset:
                break  # only a partial last line: the rest comes later
            table, used = metric_cache.parse_piece(data)  # a piece of many sparse keys: less than `data`
            self.offset += used
            self._append(table)

    def _start_from_overview(self, run_dir: Path) -> None:
        """Start from the thinned columns the cache builder saved (runstore/metrics/metric_overview.py), if valid."""
        found = metric_overview.load(run_dir, self.max_rows)
        if found is None:
            return
        values, present, self.offset, self.records = found
        rows = len(next(iter(values.values()))) if values else 0
        rid = np.arange(rows, dtype=np.int64)  # numbers below self.records: later records follow them
        x = {k: values.get(k, np.full(rows, np.nan)) for k in X_KEYS}
        x_has = {k: present.get(k, np.zeros(rows, bool)) for k in X_KEYS}
        points = {
            k: (rid[present[k]], v[present[k]]) for k, v in values.items() if k not in X_KEYS and present[k].any()
        }
        self._cols, self._cache_end = _Columns(rid, x, x_has, points), self.offset
        self._thinned = self.records > rows

    def save_overview(self, run_dir: Path) -> bool:
        """Save the held columns as run_dir's overview (what a fresh table then starts from); False when it
        cannot, or when as one dense column per key it would exceed metric_cache.MAX_CELLS."""
        with self._lock:
            c = self._cols
            if c.rows * (len(c.points) + len(X_KEYS)) > metric_cache.MAX_CELLS:
                return False  # a fresh table reads the cache's parts instead
            values, present = dict(c.x), dict(c.x_has)
            for k, (at, vals) in c.points.items():
                pos = np.searchsorted(c.rid, at)
                values[k], present[k] = np.full(c.rows, np.nan), np.zeros(c.rows, bool)
                values[k][pos], present[k][pos] = vals, True
            return metric_overview.save(run_dir, values, present, self.offset, self.records, self.max_rows)

    def _append(self, table: pa.Table) -> None:
        n = table.num_rows
        if not n:
            return
        old = self._cols
        rid = np.arange(self.records, self.records + n, dtype=np.int64)
        self.records += n
        columns = dict(zip(table.column_names, table.columns, strict=True))  # by name: Table.column(name) scans
        x, x_has = {}, {}
        for k in X_KEYS:
            vals, has = _values(columns[k]) if k in columns else (np.full(n, np.nan), np.zeros(n, bool))
            x[k], x_has[k] = np.concatenate([old.x[k], vals]), np.concatenate([old.x_has[k], has])
        points = dict(old.points)
        for k in metric_cache.dropped_keys(table)[: MAX_TAGS - len(self._dropped)]:  # left out of the piece
            self._dropped.add(k)
        for k, col in columns.items():
            if k in X_KEYS or k in NOT_STORED:
                continue
            if k not in points and len(points) >= MAX_TAGS:
                if len(self._dropped) < MAX_TAGS:  # a count, bounded too
                    self._dropped.add(k)
                continue
            vals, has = _values(col)
            if has.any():
                at, old_vals = points.get(k, (EMPTY_I, EMPTY_F))
                points[k] = (np.concatenate([at, rid[has]]), np.concatenate([old_vals, vals[has]]))
        self._cols = self._bounded(_Columns(np.concatenate([old.rid, rid]), x, x_has, points))

    def _bounded(self, cols: _Columns) -> _Columns:
        """`cols` with each key over its share of max_rows thinned to half of it, and the rows no key
        refers to let go (the first and last kept: the run's extent) once more are held than the limit."""
        keys = max(1, len(cols.points))
        cap = min(self.max_rows, max(self.max_rows // keys, MIN_KEY_POINTS, POINT_BUDGET // keys))
        over = [k for k, (at, _) in cols.points.items() if at.size > cap]
        if not over and cols.rows <= self._row_limit:
            return cols
        points = dict(cols.points)
        for k in over:
            at, vals = points[k]
            step, has = _at(cols, at, "step")
            pos = step if has.all() and np.isfinite(step).all() else at.astype(float)
            keep = np.unique(bucket_extremes(pos, vals, max(1, cap // 8)))  # 4 a bucket: half the cap
            points[k] = (at[keep], vals[keep])
        self._thinned = self._thinned or bool(over)
        used = np.unique(np.concatenate([cols.rid[[0, -1]], *(at for at, _ in points.values())]))
        keep = np.isin(cols.rid, used, assume_unique=True)
        out = _Columns(
            cols.rid[keep], {k: v[keep] for k, v in cols.x.items()}, {k: v[keep] for k, v in cols.x_has.items()}, points
        )
        self._row_limit = max(self.max_rows, 2 * out.rows)  # not again at the next append
        return out

    def tags(self) -> set[str]:
        """Metric names (x keys excluded)."""
        return set(self._cols.points)

    def ordered_tags(self) -> list[str]:
        """Metric names in the order they first appeared (x keys excluded)."""
        return list(self._cols.points)

    def series(self, tag: str, x: str = "step") -> tuple[np.ndarray, np.ndarray]:
        """(x, y) of the records that have both `tag` and `x`, in file order (as `components.series.extract`)."""
        c = self._cols
        at, vals = c.column(tag)
        xs, has = _at(c, at, x)
        return xs[has], vals[has]

    def step_range(self) -> tuple[float, float] | None:
        """(first, last) step held (thinning keeps both ends), or None without steps."""
        _, steps = self._cols.column("step")
        steps = steps[np.isfinite(steps)]
        return (float(steps.min()), float(steps.max())) if steps.size else None

    def window(self, run_dir: Path, tag: str, x: str, lo: float, hi: float) -> tuple[np.ndarray, np.ndarray]:
        """(x, y) of `tag` for lo <= step <= hi: the held points when nothing was thinned (or the whole
        run is asked for), else every record of the range from the columnar cache (full resolution).
        """
        c = self._cols
        full = self.step_range()
        if self._thinned and full is not None and (lo > full[0] or hi < full[1]):
            xs, ys = metric_cache.read_range(Path(run_dir), tag, x, lo, hi)
            if xs.size:
                return xs, ys
        at, vals = c.column(tag)
        xs, has = _at(c, at, x)
        step, has_step = _at(c, at, "step")
        rows = has & has_step & (step >= lo) & (step <= hi)
        return xs[rows], vals[rows]

    def last(self, tag: str) -> float | None:
        """Latest value of `tag` (None if absent or not finite)."""
        _, vals = self._cols.column(tag)
        if vals.size == 0:
            return None
        v = float(vals[-1])
        return v if math.isfinite(v) else None
