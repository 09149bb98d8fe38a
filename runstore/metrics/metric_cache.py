"""A columnar cache of metrics.jsonl, kept incrementally next to it in `metrics.cache/`.

metrics.jsonl is the training process's contract and stays the source of truth. Parsing a
million JSON lines takes seconds, so the page parses each byte range once (runstore/metrics/metric_parse.py:
pyarrow's multithreaded JSON reader, Python's `json` for pieces it refuses) and keeps the result as Arrow
IPC files of float64 columns, one per ~4 MB piece of the file (shorter for many sparse keys; written
compressed past WIDE_CELLS cells): `<start>-<end>.arrow` plus `index.json` naming them with their
step range. A null is a record without that key; NaN a value that is not a finite number ("nan", "inf"
strings, null, booleans).

Only the last part ever changes: it is rewritten (atomically) when the file grew by
`MIN_GROWTH` bytes. A replaced or truncated metrics.jsonl throws the cache away; a run folder
that cannot be written simply goes uncached. No Streamlit here.
"""

from __future__ import annotations

import contextlib
import math
import os
import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np
import pandas  # noqa: F401 - pyarrow imports it lazily at its first conversion; the page has it loaded anyway
import pyarrow as pa
import pyarrow.compute  # noqa: F401 - imported now: a first cast would import it lazily (~20 MB of code)
import pyarrow.ipc as ipc

from runstore import atomic, line_reader, nofollow, safe_files
from runstore.metrics.metric_parse import (  # noqa: F401 - re-exported: the cache's callers parse through it
    DROPPED,
    MAX_CELLS,
    MAX_TAGS,
    PART_BYTES,
    SENTINELS,
    SKIPPED,
    WIDE_CELLS,
    dropped_keys,
    parse,
    parse_piece,
)
from runstore.run_folder import METRICS_CACHE, RunFolder

CACHE_DIR = METRICS_CACHE  # metrics.cache/, the name tests use; its place is RunFolder.metrics_cache
MIN_GROWTH = 512 << 10  # the last part is rewritten after this much growth (or on `sync(force=True)`)
VERSION = 2  # 1 left out "ts"
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


identity = line_reader.identity  # what the index keeps of the file it covers


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
    doc = atomic.read_json(cache / "index.json", {})
    if not isinstance(doc, dict) or doc.get("version") != VERSION:
        return []
    parts = _valid_parts(doc)
    if line_reader.saved_replaced(doc, ident, parts[-1].end if parts else 0):
        return []  # replaced or truncated: start again
    return parts if all(safe_files.is_regular(cache / p.name) for p in parts) else []


def _write_part(cache: Path, start: int, data: bytes, threads: bool) -> Part:
    table, used = parse_piece(data, threads)
    end = start + used
    name = part_name(start, end)
    nofollow.replace(cache, name, ipc_writer(table), fsync=False)
    step = table.column("step").to_numpy(zero_copy_only=False) if "step" in table.column_names else np.empty(0)
    step = step[np.isfinite(step)]
    lo, hi = (float(step.min()), float(step.max())) if step.size else (math.nan, math.nan)
    return Part(name, start, end, table.num_rows, lo, hi)


def ipc_writer(table: pa.Table) -> Callable[[BinaryIO], None]:
    """A function writing `table` as an Arrow IPC file into an open file (for `nofollow.replace`)."""

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
    folder = RunFolder(run_dir)
    path, cache = folder.records_path, folder.metrics_cache
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
                data, new_end = line_reader.read_lines(path, end, PART_BYTES)
                if new_end == end:
                    break
                parts.append(_write_part(cache, end, data, threads))  # may cover less: a piece of many keys
                end, written = parts[-1].end, written + 1
            doc = {"version": VERSION, **{k: ident[k] for k in ("dev", "ino", "head")}}
            doc["parts"] = [asdict(p) for p in parts]
            atomic.atomic_write_json(cache / "index.json", doc)
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
    path = RunFolder(run_dir).metrics_cache / part.name
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
