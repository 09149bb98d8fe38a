"""One bounded reader for the small JSON files of a run folder: size, nesting depth and entry count checked
before the file is parsed.

json.loads keeps every value as a Python object: 16 MB of empty objects (`[{},{},...]`) is 5.6 million
dicts, ~400 MB, and a reader that walks them (hosts.json's table) several GB. So a file is refused by its
size (fstat, before reading), then by its entries and its depth counted over its bytes with numpy (separators
and brackets outside strings), and only then parsed. Each file name has its bounds (`BOUNDS`); a refusal
names the bound (callers add the file), and is remembered for the file's inode, size and modification time,
so a page listing runs pays for a crafted file once.
No JAX and no Streamlit here.
"""

from __future__ import annotations

import collections
import json
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from runstore.safe_files import open_regular


@dataclass(frozen=True)
class Bounds:
    """What one file may hold: bytes, entries (values, keys and containers: ~100 bytes each once parsed), depth."""

    max_bytes: int
    max_entries: int
    max_depth: int


DEFAULT = Bounds(16 * 2**20, 1_000_000, 100)  # config.json, summary.json, tables, figures: ~100 MB parsed at most
# Files only jaxdash writes, a few KB each: tighter, as a page reads them on every listing.
PROCESS_STATE = Bounds(4 * 2**20, 100_000, 32)  # a run's status, a job's hosts
PAGE_LAUNCH = Bounds(1 * 2**20, 20_000, 32)  # the page's launch file
# File name -> its bounds. The run folder's names are its own (runstore.run_folder sets its files' bounds here
# when it is imported: every reader of a run file stands on it).
BOUNDS: dict[str, Bounds] = {}
SCAN_CHUNK = 2**19  # bytes scanned at a time: ~10 MB of numpy temporaries, ~0.3 s for 16 MB
_SEPARATOR = np.zeros(256, dtype=bool)
_SEPARATOR[list(b",:[{")] = True  # each starts an entry: a value, a key or a container
_DEPTH = np.zeros(256, dtype=np.int8)
_DEPTH[list(b"[{")], _DEPTH[list(b"]}")] = 1, -1
_REFUSED: collections.OrderedDict[tuple, str] = collections.OrderedDict()  # file identity -> why (LRU)
_REFUSED_MAX = 256
_LOCK = threading.Lock()


class TooLarge(ValueError):
    """A file over one of its bounds; the message names the bound (not the file: callers add it)."""


def bounds_for(path: str | os.PathLike) -> Bounds:
    """The bounds of a run file, by its name (DEFAULT for any other)."""
    return BOUNDS.get(Path(path).name, DEFAULT)


def structure(raw: bytes) -> tuple[int, int]:
    """(entries, deepest nesting) of JSON bytes, separators and brackets inside strings left out, at numpy's speed
    a SCAN_CHUNK at a time (strings, escapes and backslash runs carried across chunks)."""
    entries = depth = deepest = 0
    inside, backslashes = False, 0  # the state where the chunk starts: in a string; backslashes just before it
    for start in range(0, len(raw), SCAN_CHUNK):
        arr = np.frombuffer(raw, dtype=np.uint8, count=min(SCAN_CHUNK, len(raw) - start), offset=start)
        idx = np.arange(arr.size, dtype=np.int32)
        last = np.maximum.accumulate(np.where(arr == 92, np.int32(-1 - backslashes), idx))  # last non-backslash
        run = np.empty(arr.size, dtype=np.int32)  # backslashes right before each byte: odd, it is escaped
        run[0] = backslashes
        np.subtract(idx[:-1], last[:-1], out=run[1:])
        quote = (arr == 34) & (run % 2 == 0)
        in_string = (np.cumsum(quote, dtype=np.int32) % 2 == 1) != inside
        outside = ~in_string & ~quote
        entries += int(np.count_nonzero(_SEPARATOR[arr] & outside))
        delta = np.where(outside, _DEPTH[arr], np.int8(0))
        if delta.any():
            levels = np.cumsum(delta, dtype=np.int32) + depth
            deepest, depth = max(deepest, int(levels.max())), int(levels[-1])
        inside, backslashes = bool(in_string[-1]), int(arr.size - 1 - last[-1])
    return entries, deepest


def check(raw: bytes, bounds: Bounds) -> None:
    """Raise TooLarge if `raw` is over `bounds` in size, entries or nesting depth (nothing parsed)."""
    if len(raw) > bounds.max_bytes:
        raise TooLarge(f"larger than the {_mb(bounds.max_bytes)} limit of this file")
    entries, depth = structure(raw)
    if entries > bounds.max_entries:
        raise TooLarge(f"holds {entries:,} entries, over the limit of {bounds.max_entries:,} for this file")
    if depth > bounds.max_depth:
        raise TooLarge(f"nested {depth:,} deep, over the limit of {bounds.max_depth} for this file")


def read_checked(path: str | os.PathLike, bounds: Bounds | None = None) -> bytes:
    """The bytes of a regular, non-link file, checked against `bounds` (by its name when None) by `check`.

    Raises:
      FileNotFoundError / OSError: as safe_files.open_regular (missing, a link, not a regular file).
      TooLarge: over a bound (remembered for this file's inode, size and mtime: refused again without reading).
    """
    bounds = bounds or bounds_for(path)
    with open_regular(path) as f:
        st = os.fstat(f.fileno())
        key = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, bounds)
        with _LOCK:
            why = _REFUSED.get(key)
        if why is None and st.st_size > bounds.max_bytes:
            why = f"{_mb(st.st_size)}, larger than the {_mb(bounds.max_bytes)} limit of this file"
        if why is not None:
            raise TooLarge(why)
        raw = f.read(bounds.max_bytes + 1)
    try:
        check(raw, bounds)
    except TooLarge as exc:
        with _LOCK:
            _REFUSED[key] = str(exc)
            while len(_REFUSED) > _REFUSED_MAX:
                _REFUSED.popitem(last=False)
        raise
    return raw


def load(path: str | os.PathLike, bounds: Bounds | None = None) -> Any:
    """The parsed JSON of `read_checked(path, bounds)`.

    Raises:
      OSError, TooLarge: as `read_checked`.
      ValueError / RecursionError: not JSON (UnicodeDecodeError for bytes that are not UTF-8).
    """
    return json.loads(read_checked(path, bounds))


def _mb(n: int) -> str:
    return f"{n / 2**20:.1f} MB" if n % 2**20 else f"{n >> 20} MB"
