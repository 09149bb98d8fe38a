"""A columnar cache of metrics.jsonl, kept incrementally next to it in `metrics.cache/`.

metrics.jsonl is the training process's contract and stays the source of truth. Parsing a
million JSON lines takes seconds, so the page parses each byte range once (pyarrow's
multithreaded JSON reader, Python's `json` for pieces it refuses) and keeps the result as Arrow
IPC files of float64 columns, one per ~4 MB piece of the file: `<start>-<end>.arrow` plus
`index.json` naming them with their step range. A null is a record without that key; NaN a value
that is not a finite number ("nan", "inf" strings, null, booleans).

Only the last part ever changes: it is rewritten (atomically) when the file grew by
`MIN_GROWTH` bytes. A replaced or truncated metrics.jsonl throws the cache away; a run folder
that cannot be written simply goes uncached. No Streamlit here.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import threading
import zlib
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np
import pandas  # noqa: F401 - pyarrow imports it lazily at its first conversion; the page has it loaded anyway
import pyarrow as pa
import pyarrow.compute  # noqa: F401 - imported now: a first cast would import it lazily (~20 MB of code)
import pyarrow.ipc as ipc
import pyarrow.json as pj

from runstore import run_store, safe_files

CACHE_DIR = "metrics.cache"
PART_BYTES = 4 << 20  # one part: ~28,000 records
MIN_GROWTH = 512 << 10  # the last part is rewritten after this much growth (or on `sync(force=True)`)
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
WIDE_CELLS = 1 << 20  # a part of more cells is written compressed (ipc_writer)
DROPPED = b"jaxdash_dropped"  # schema metadata of a piece: the keys left out of it (JSON list)
SKIPPED: tuple[str, ...] = ()  # every key is kept: the CSV download is written from the cache ("ts" too)
VERSION = 2  # 1 left out "ts"
# JSON has no NaN: the run store writes "nan"/"inf"/"-inf"; pyarrow reads these sentinels instead.
SENTINELS = {
    b'"nan"': (1.2345678e308, math.nan),
    b'"inf"': (1.3345678e308, math.inf),
    b'"-inf"': (-1.3345678e308, -math.inf),
}
_LOCKS: dict[str, threading.Lock] = {}
_LOCKS_GUARD = threading.Lock()


@dataclass(frozen=True)
class Part:
    """One cached byte range [start, end) of metrics.jsonl."""

    name: str
    start: int
    end: int
    rows: int
    step_min: float
    step_max: float


def _lock(run_dir: Path) -> threading.Lock:
    with _LOCKS_GUARD:
        return _LOCKS.setdefault(str(run_dir), threading.Lock())


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


def read_piece(path: Path, start: int, max_bytes: int) -> tuple[bytes, int]:
    """About `max_bytes` of whole lines from byte `start`, and the offset after them."""
    try:
        with safe_files.open_regular(path) as f:  # never through a link, never a FIFO
            f.seek(start)
            data = f.read(max_bytes) + f.readline()
    except OSError:
        return b"", start
    end = data.rfind(b"\n") + 1
    return data[:end], start + end


def identity(path: Path) -> dict | None:
    """The file's device, inode, size and a checksum of its first 256 bytes (None if unreadable)."""
    try:
        with safe_files.open_regular(path) as f:
            st = os.fstat(f.fileno())
            head = zlib.crc32(f.read(256))
    except OSError:
        return None
    return {"dev": st.st_dev, "ino": st.st_ino, "head": head, "size": st.st_size}


def part_name(start: int, end: int) -> str:
    """The file name of the part covering bytes [start, end)."""
    return f"{start:012d}-{end:012d}.arrow"


def _valid_parts(doc: dict) -> list[Part]:
    """The index's parts if each is one we could have written: its own name, contiguous from byte 0.

    The index is read back from a folder anyone may have crafted: a part named anything else (say
    "../../outside/file") would be deleted or read by this module, so the whole index is refused.
    """
    try:
        parts = [Part(**p) for p in doc.get("parts", [])]
    except TypeError:
        return []
    end = 0
    for p in parts:
        if not (isinstance(p.start, int) and isinstance(p.end, int) and p.start == end < p.end):
            return []
        if p.name != part_name(p.start, p.end):
            return []
        end = p.end
    return parts


def _load_index(cache: Path, ident: dict) -> list[Part]:
    doc = run_store.read_json(cache / "index.json", {})
    if not isinstance(doc, dict) or doc.get("version") != VERSION:
        return []
    same = all(doc.get(k) == ident[k] for k in ("dev", "ino", "head"))
    parts = _valid_parts(doc)
    if not same or (parts and parts[-1].end > ident["size"]):
        return []  # replaced or truncated: start again
    return parts if all(safe_files.is_regular(cache / p.name) for p in parts) else []


def _write_part(cache: Path, start: int, data: bytes, threads: bool) -> Part:
    table, used = parse_piece(data, threads)
    end = start + used
    name = part_name(start, end)
    safe_files.replace_with(cache / name, ipc_writer(table))
    step = table.column("step").to_numpy(zero_copy_only=False) if "step" in table.column_names else np.empty(0)
    step = step[np.isfinite(step)]
    lo, hi = (float(step.min()), float(step.max())) if step.size else (math.nan, math.nan)
    return Part(name, start, end, table.num_rows, lo, hi)


def ipc_writer(table: pa.Table) -> Callable[[BinaryIO], None]:
    """A function writing `table` as an Arrow IPC file into an open file (for `safe_files.replace_with`)."""

    # Columns of many sparse keys are mostly nulls: compressed, such a part takes on disk about what its
    # JSON did, not 8 bytes a cell (read back whole, as every part is).
    wide = table.num_columns * table.num_rows > WIDE_CELLS
    options = ipc.IpcWriteOptions(compression="zstd") if wide else None

    def write(f: BinaryIO) -> None:
        with ipc.new_file(pa.PythonFile(f, mode="w"), table.schema, options=options) as writer:
            writer.write_table(table)

    return write


def usable_dir(cache: Path) -> bool:
    """True if `cache` is missing or a real folder: one that is a link (maybe to anywhere) is never used."""
    return not os.path.lexists(cache) or safe_files.is_real_dir(cache)


def sync(run_dir: Path, force: bool = False, max_parts: int | None = None, threads: bool = True) -> list[Part]:
    """Extend the cache over what metrics.jsonl gained; returns its parts ([] when it cannot be kept).

    Without `force`, a tail shorter than MIN_GROWTH is left for later (the page reads it itself).
    `max_parts` bounds the parts written in this call (a background build lets go of the run's lock
    between parts, so a page opening the run finishes the rest itself); `threads` as in `parse`.
    """
    run_dir = Path(run_dir)
    path, cache = run_dir / "metrics.jsonl", run_dir / CACHE_DIR
    with _lock(run_dir):
        ident = identity(path)
        if ident is None or not usable_dir(cache):
            return []
        parts = _load_index(cache, ident) if cache.is_dir() else []
        end = parts[-1].end if parts else 0
        if ident["size"] - end < (1 if force else MIN_GROWTH):
            return parts
        try:
            cache.mkdir(exist_ok=True)
            if not safe_files.is_real_dir(cache):
                return []  # replaced by a link meanwhile
            old = {p.name for p in parts}
            if parts and parts[-1].end - parts[-1].start < PART_BYTES:
                end = parts.pop().start  # a short last part grows into a full one
            written = 0
            while max_parts is None or written < max_parts:
                data, new_end = read_piece(path, end, PART_BYTES)
                if new_end == end:
                    break
                parts.append(_write_part(cache, end, data, threads))  # may cover less: a piece of many keys
                end, written = parts[-1].end, written + 1
            doc = {"version": VERSION, **{k: ident[k] for k in ("dev", "ino", "head")}}
            doc["parts"] = [asdict(p) for p in parts]
            run_store.atomic_write_json(cache / "index.json", doc)
            for name in old - {p.name for p in parts}:  # names checked by _valid_parts: inside `cache`
                with contextlib.suppress(OSError):
                    (cache / name).unlink()
        except OSError:
            return []  # read-only or full disk: the page parses the file itself
        return parts


def read_part(run_dir: Path, part: Part) -> pa.Table:
    """One cached part (memory-mapped: only the columns used are paged in)."""
    with open_part(run_dir, part) as source:
        return ipc.open_file(source).read_all()


def open_part(run_dir: Path, part: Part) -> pa.MemoryMappedFile:
    """A cached part's file, memory-mapped; raises OSError if it is not a regular file of the cache."""
    path = Path(run_dir) / CACHE_DIR / part.name
    if not (safe_files.plain_name(part.name) and safe_files.is_regular(path)):
        raise OSError(f"{path}: not a cache part")
    return pa.memory_map(str(path))


def read_range(run_dir: Path, tag: str, x: str, lo: float, hi: float) -> tuple[np.ndarray, np.ndarray]:
    """Every (x, tag) point of records with lo <= step <= hi, at full resolution, in file order."""
    xs, ys = [], []
    for part in sync(run_dir, force=True):
        if not (part.step_max >= lo and part.step_min <= hi):
            continue
        table = read_part(run_dir, part)
        if tag not in table.column_names or x not in table.column_names or "step" not in table.column_names:
            continue
        step = table.column("step").to_numpy(zero_copy_only=False)
        cols = [table.column(c) for c in (x, tag)]
        valid = np.asarray(cols[0].is_valid()) & np.asarray(cols[1].is_valid()) & (step >= lo) & (step <= hi)
        xs.append(cols[0].to_numpy(zero_copy_only=False)[valid])
        ys.append(cols[1].to_numpy(zero_copy_only=False)[valid])
    if not xs:
        return np.empty(0), np.empty(0)
    return np.concatenate(xs), np.concatenate(ys)
