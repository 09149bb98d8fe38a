"""Parsed IDX datasets kept as .npy files, so a process that trains on MNIST skips gunzip and parsing.

Parsing Fashion-MNIST's four .gz files costs ~0.4 CPU s, paid by every process that trains on it
(each CLI run, sweep trial process, warm worker and multi-host process). The parsed arrays are kept
in a folder of entries (training/data.py passes `~/.cache/jaxdash/parsed/`, XDG_CACHE_HOME respected)
and read back memory-mapped and read-only in ~10 ms.

An entry is keyed by the source files' resolved folder and each file's inode, size and modification
time: a replaced or edited file is parsed again, and the entry made for it replaces the old one.
Datasets under 4 MiB parse in milliseconds and get no entry. An
entry is written in a temporary folder and renamed into place, so a reader sees a whole entry or none.
Nothing here is required: an unwritable cache, a full disk or a damaged entry means the files are
parsed as before.
"""

from __future__ import annotations

import hashlib
import shutil
import tempfile
from pathlib import Path

import numpy as np

Arrays = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]
NAMES = ("train_x.npy", "train_y.npy", "test_x.npy", "test_y.npy")
MIN_BYTES = 4 << 20  # smaller datasets parse in a few ms: not worth an entry (nor one per test's tmp folder)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _entry(entries: Path, key: tuple) -> tuple[str, Path]:
    """(the prefix shared by every entry of key's dataset folder, this key's entry folder under `entries`)."""
    prefix = _digest(str(key[0]))
    return prefix, entries / f"{prefix}-{_digest(repr(key))}"


def load(entries: Path, key: tuple) -> Arrays | None:
    """The parsed arrays kept under `entries` for `key` (read-only, memory-mapped), or None."""
    _, entry = _entry(entries, key)
    try:
        arrays = tuple(np.load(entry / name, mmap_mode="r", allow_pickle=False) for name in NAMES)
    except FileNotFoundError:  # no entry, or one replaced while it was read
        return None
    except (OSError, ValueError):  # a damaged entry (entries never change once renamed into place)
        shutil.rmtree(entry, ignore_errors=True)
        return None
    train_x, train_y, test_x, test_y = arrays
    if train_x.shape[0] != train_y.shape[0] or test_x.shape[0] != test_y.shape[0]:
        return None
    return tuple(a.view(np.ndarray) for a in arrays)  # type: ignore[return-value] - plain arrays, still mapped


def save(entries: Path, key: tuple, arrays: Arrays) -> None:
    """Keep `arrays` under `entries` for `key`, replacing the entries of older versions of the same dataset
    folder (best effort)."""
    if sum(a.nbytes for a in arrays) < MIN_BYTES:
        return
    prefix, entry = _entry(entries, key)
    try:
        entry.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=entry.parent))
    except OSError:
        return
    try:
        for name, array in zip(NAMES, arrays, strict=True):
            np.save(tmp / name, np.ascontiguousarray(array), allow_pickle=False)
        tmp.rename(entry)
    except OSError:  # a full disk, or another process renamed its copy of this entry first
        shutil.rmtree(tmp, ignore_errors=True)
        return
    for old in entry.parent.glob(f"{prefix}-*"):
        if old != entry:
            shutil.rmtree(old, ignore_errors=True)
