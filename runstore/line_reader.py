"""The one byte reader of a file of JSON lines (a run's records), and the one "file was replaced" check.

Below the run folder (`runstore.run_folder`), it names no run file: its callers pass the path the folder gives
them. Every reader of records goes through `read_lines` (whole lines only: a torn last line is left until its
newline is written) and `replaced` (a new inode, or shorter than what was read: start again from byte 0;
`saved_replaced` for a reading saved on disk): `RunFolder.records`, `RecordsReader`, `MetricTable.update`, the
metrics cache and its overview, the CSV download.
"""

from __future__ import annotations

import json
import os
import zlib
from collections.abc import Mapping
from typing import Any

from runstore.safe_files import open_regular

FileKey = tuple[int, int]  # (device, inode): the file a reader has been reading


def read_lines(path: str | os.PathLike, offset: int = 0, max_bytes: int | None = None) -> tuple[bytes, int]:
    """The whole lines of `path` from byte `offset` on, and the offset after them.

    With `max_bytes`, about that much (the line it ends in read to its end). A missing, unreadable or
    non-regular file (a link, a FIFO: never followed, never blocking) gives (b"", offset).
    """
    try:
        with open_regular(path) as f:
            f.seek(offset)
            data = f.read() if max_bytes is None else f.read(max_bytes) + f.readline()
    except OSError:
        return b"", offset
    end = data.rfind(b"\n") + 1
    return data[:end], offset + end


def parse_records(data: bytes) -> list[dict[str, Any]]:
    """Whole JSON lines as records; a line that is not a JSON object is skipped."""
    records = []
    for line in data.splitlines():
        try:
            rec = json.loads(line)
        except (ValueError, RecursionError):
            continue
        if isinstance(rec, dict):
            records.append(rec)
    return records


def file_key(st: os.stat_result | None) -> FileKey | None:
    """The (device, inode) of a stat result, None for a missing file."""
    return (st.st_dev, st.st_ino) if st is not None else None


def replaced(known: FileKey | None, st: os.stat_result | None, offset: int) -> bool:
    """Whether a file read up to `offset` as `known` must be read again from byte 0: it is another file now
    (a new inode: replaced by a rename, or deleted) or shorter than what was read (truncated)."""
    return file_key(st) != known or (st is not None and st.st_size < offset)


def identity(path: str | os.PathLike) -> dict[str, int] | None:
    """What a saved reading (the metrics cache, its overview) keeps of the file it covers: device, inode, size and
    a checksum of its first 256 bytes (an inode number can be reused by a later file). None if unreadable."""
    try:
        with open_regular(path) as f:
            st = os.fstat(f.fileno())
            head = zlib.crc32(f.read(256))
    except OSError:
        return None
    return {"dev": st.st_dev, "ino": st.st_ino, "head": head, "size": st.st_size}


def saved_replaced(saved: Mapping[str, Any], now: Mapping[str, int], end: int) -> bool:
    """`replaced` for a saved reading covering `end` bytes of the file `saved` names (its "dev", "ino", "head")
    against the file's `identity` now: another file, another first 256 bytes, or shorter than `end`."""
    known = (saved.get("dev"), saved.get("ino"))
    return known != (now["dev"], now["ino"]) or saved.get("head") != now["head"] or now["size"] < end


def stat(path: str | os.PathLike) -> os.stat_result | None:
    """`path`'s own stat (a link is not followed), None when missing or unreadable."""
    try:
        return os.stat(path, follow_symlinks=False)
    except OSError:
        return None
