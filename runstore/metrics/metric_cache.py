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
MAX_TAGS = 256
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


def _python_table(data: bytes) -> pa.Table:
    """`data` (whole lines) parsed line by line: bad lines skipped, every value as float or NaN."""
    cols: dict[str, list[float | None]] = {}
    n = 0
    for line in data.splitlines():
        try:
            rec = json.loads(line)
        except (ValueError, RecursionError):
            continue
        if not isinstance(rec, dict):
            continue
        for k, v in rec.items():
            if k in SKIPPED:
                continue
            if k not in cols:
                if len(cols) >= MAX_TAGS:
                    continue
                cols[k] = [None] * n
            cols[k].append(_float(v))
        n += 1
        for c in cols.values():
            if len(c) < n:
                c.append(None)
    return pa.table({k: pa.array(v, pa.float64()) for k, v in cols.items()}) if n else pa.table({})


def parse(data: bytes, threads: bool = True) -> pa.Table:
    """Whole JSON lines as a table of float64 columns (null = key absent, NaN = not a finite number).

    `threads=False` parses in the calling thread only (Arrow's shared pool is left to the pages).
    """
    if not data.strip():
        return pa.table({})
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
        if table.num_columns > MAX_TAGS or not numeric:
            raise TypeError("not all columns are numbers")
        out = {}
        for name, col in zip(table.column_names, table.columns, strict=True):
            arr = col.cast(pa.float64()).combine_chunks()
            values = arr.to_numpy(zero_copy_only=False).copy()
            for sentinel, value in SENTINELS.values():
                values[values == sentinel] = value
            out[name] = pa.array(values, pa.float64(), mask=~np.asarray(arr.is_valid()))
        return pa.table(out)
    except (pa.ArrowInvalid, TypeError, ValueError):
        return _python_table(data)  # e.g. a torn line, a string column, a line that is not an object


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


def _write_part(cache: Path, start: int, data: bytes, end: int, threads: bool) -> Part:
    table = parse(data, threads)
    name = part_name(start, end)
    safe_files.replace_with(cache / name, ipc_writer(table))
    step = table.column("step").to_numpy(zero_copy_only=False) if "step" in table.column_names else np.empty(0)
    step = step[np.isfinite(step)]
    lo, hi = (float(step.min()), float(step.max())) if step.size else (math.nan, math.nan)
    return Part(name, start, end, table.num_rows, lo, hi)


def ipc_writer(table: pa.Table) -> Callable[[BinaryIO], None]:
    """A function writing `table` as an Arrow IPC file into an open file (for `safe_files.replace_with`)."""

    def write(f: BinaryIO) -> None:
        with ipc.new_file(pa.PythonFile(f, mode="w"), table.schema) as writer:
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
                parts.append(_write_part(cache, end, data, new_end, threads))
                end, written = new_end, written + 1
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
