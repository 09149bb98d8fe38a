"""Parsing metrics.jsonl: whole JSON lines into a table of float64 columns, for the cache's parts and the page.

pyarrow's multithreaded JSON reader parses most pieces; Python's `json` those it refuses (a torn line, a string
value) and those of many sparse keys (each on few lines), for which pyarrow's reader slows with the square of
its columns. A piece never holds more than MAX_TAGS keys or MAX_CELLS cells as dense columns (`parse_piece`
cuts it short; `parse` leaves the keys out), and the keys it left out are named in its schema metadata
(DROPPED, `dropped_keys`). No Streamlit here.
"""

from __future__ import annotations

import io
import json
import math

import numpy as np
import pandas  # noqa: F401 - pyarrow imports it lazily at its first conversion; the page has it loaded anyway
import pyarrow as pa
import pyarrow.compute  # noqa: F401 - imported now: a first cast would import it lazily (~20 MB of code)
import pyarrow.json as pj

PART_BYTES = 4 << 20  # one part of the cache: ~28,000 records
# Keys (columns) kept per run: W&B keeps every key a run logs, so does this cache up to this bound. It protects
# the server from a file that invents a new key per line; a key past it is left out of the cache's columns
# (still in metrics.jsonl) and the page says how many (runstore.metrics.metric_table.MetricTable.dropped_keys).
MAX_TAGS = 10_000
# Cells (records x keys) of one parsed piece as dense float64 columns: 32 MB. Lines of many sparse keys (each
# logged on few of them) past it are cut into shorter pieces (`parse_piece`: the cache's parts and the page's
# reads), so a piece never costs more memory than this, however its keys are spread.
MAX_CELLS = 4 << 20
# A piece whose sampled lines hold more distinct keys goes to `_python_table` too: pyarrow's JSON reader slows
# with the square of its columns (3,000 one-key-a-line columns: 1.8 s, 4,000: 6 s here; Python: 0.3 s).
WIDE_KEYS = 128
SAMPLE_BYTES = 64 << 10  # of a piece's lines looked at to tell
WIDE_CELLS = 1 << 20  # a cache part of more cells is written compressed (metric_cache.ipc_writer)
DROPPED = b"jaxdash_dropped"  # schema metadata of a piece: the keys left out of it (JSON list)
SKIPPED: tuple[str, ...] = ()  # every key is kept: the CSV download is written from the cache ("ts" too)
# JSON has no NaN: the run store writes "nan"/"inf"/"-inf"; pyarrow reads these sentinels instead.
SENTINELS = {
    b'"nan"': (1.2345678e308, math.nan),
    b'"inf"': (1.3345678e308, math.inf),
    b'"-inf"': (-1.3345678e308, -math.inf),
}


def _float(v: object) -> float | None:
    if isinstance(v, bool) or v is None:
        return math.nan
    try:
        return float(v)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return math.nan


def _python_table(data: bytes, split: bool = False) -> tuple[pa.Table, int]:
    """`data` (whole lines) parsed line by line: bad lines skipped, every value as float or NaN; returns the
    table and the bytes of `data` it covers (all of them unless `split`).

    Kept sparse while parsing (per key: the lines that had it). As dense columns a piece holds at most
    MAX_CELLS cells: with `split` it ends before the line whose new keys would take it past that (at least one
    line), else a key that would is left out of it; a key past MAX_TAGS is left out too. A key left out is
    named in the table's schema metadata (DROPPED).
    """
    lines = data.splitlines(keepends=True)
    max_keys = MAX_TAGS if split else min(MAX_TAGS, max(1, MAX_CELLS // max(1, len(lines))))
    cols: dict[str, tuple[list[int], list[float]]] = {}
    dropped: set[str] = set()
    n = used = 0
    for line in lines:
        try:
            rec = json.loads(line)
        except (ValueError, RecursionError):
            used += len(line)
            continue
        if not isinstance(rec, dict):
            used += len(line)
            continue
        if split and n and (len(cols) + sum(k not in cols for k in rec)) * (n + 1) > MAX_CELLS:
            break  # the rest in the next piece
        used += len(line)
        for k, v in rec.items():
            if k in SKIPPED:
                continue
            if k not in cols and len(cols) >= max_keys:
                if len(dropped) < MAX_TAGS:
                    dropped.add(k)
                continue
            at, vals = cols.setdefault(k, ([], []))
            at.append(n)
            vals.append(_float(v))
        n += 1
    out = {}
    for k, (at, vals) in cols.items():
        column, has = np.full(n, np.nan), np.zeros(n, bool)
        column[at], has[at] = vals, True
        out[k] = pa.array(column, pa.float64(), mask=~has)
    table = pa.table(out) if n else pa.table({})
    return (table.replace_schema_metadata({DROPPED: json.dumps(sorted(dropped))}) if dropped else table), used


def dropped_keys(table: pa.Table) -> list[str]:
    """The keys `_python_table` left out of a piece (its schema metadata), [] for most."""
    try:
        names = json.loads((table.schema.metadata or {}).get(DROPPED, b"[]"))
    except ValueError:
        return []
    return [str(k) for k in names] if isinstance(names, list) else []


def _wide(data: bytes, sample: int = 256) -> bool:
    """True when lines spread over `data` hold more than WIDE_KEYS distinct keys, most of them on few lines
    (sparse: pyarrow's reader would make a column of each; lines that all hold the same 1,000 keys are not)."""
    lines = data.splitlines()
    keys: set[str] = set()
    widest = read = 0
    for line in lines[:: max(1, len(lines) // sample)]:
        read += len(line)
        if read > SAMPLE_BYTES:
            break  # long lines: a few tell (parsing them all cost as much as the piece)
        try:
            rec = json.loads(line)
        except (ValueError, RecursionError):
            continue
        if isinstance(rec, dict):
            keys.update(rec)
            widest = max(widest, len(rec))
    return len(keys) > WIDE_KEYS and len(keys) > 2 * widest


def parse(data: bytes, threads: bool = True) -> pa.Table:
    """Whole JSON lines as a table of float64 columns (null = key absent, NaN = not a finite number).

    `threads=False` parses in the calling thread only (Arrow's shared pool is left to the pages). A piece past
    MAX_CELLS leaves keys out (`dropped_keys`); `parse_piece` splits it instead.
    """
    return _parse(data, threads, split=False)[0]


def parse_piece(data: bytes, threads: bool = True) -> tuple[pa.Table, int]:
    """As `parse`, but a piece of many sparse keys is cut short (before MAX_CELLS cells as dense columns):
    returns the table and the bytes of `data` it covers, the rest for the next piece."""
    return _parse(data, threads, split=True)


def _parse(data: bytes, threads: bool, split: bool) -> tuple[pa.Table, int]:
    if not data.strip():
        return pa.table({}), len(data)
    if _wide(data):
        return _python_table(data, split)
    try:
        fixed = data
        for text, (sentinel, _) in SENTINELS.items():
            fixed = fixed.replace(b": " + text, b": " + repr(sentinel).encode())
        table = pj.read_json(
            io.BytesIO(fixed), read_options=pj.ReadOptions(use_threads=threads, block_size=PART_BYTES + (1 << 20))
        )
        table = table.drop_columns([c for c in SKIPPED if c in table.column_names])
        numeric = all(
            pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_null(t) for t in table.schema.types
        )
        if table.num_columns > MAX_TAGS or table.num_columns * table.num_rows > MAX_CELLS or not numeric:
            raise TypeError("not all columns are numbers")
        out = {}
        for name, col in zip(table.column_names, table.columns, strict=True):
            arr = col.cast(pa.float64()).combine_chunks()
            values = arr.to_numpy(zero_copy_only=False).copy()
            for sentinel, value in SENTINELS.values():
                values[values == sentinel] = value
            out[name] = pa.array(values, pa.float64(), mask=~np.asarray(arr.is_valid()))
        return pa.table(out), len(data)
    except (pa.ArrowInvalid, TypeError, ValueError):
        return _python_table(data, split)  # e.g. a torn line, a string column, a line that is not an object
