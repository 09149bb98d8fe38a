"""TensorBoard event files read with bounds: regular files inside the logdir only, record lengths checked first.

An event file is a sequence of TFRecords: an 8-byte length, its masked CRC-32C, the data, the data's
masked CRC-32C. TensorBoard's own reader takes the length on trust and reads that many bytes, so a
crafted 4 KB sparse file whose first header claims 1.9 GB makes it allocate 1.9 GB (2**62: a
MemoryError), and it opens files by name, so a FIFO blocks it forever and a link is followed out
of the logdir. Here the records are framed by `RecordReader`, which opens each file with
O_NOFOLLOW | O_NONBLOCK, checks with fstat that it is a regular file lying inside the logdir, and
checks every record's length against the bytes left in the file and MAX_RECORD before reading it.
The events themselves are still parsed by TensorBoard's `EventFileLoader` (its proto parsing and its
data_compat / dataclass_compat layers), fed by that reader. No JAX and no Streamlit here.
"""

from __future__ import annotations

import errno
import os
import stat
import struct
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
from tensorboard import data_compat, dataclass_compat
from tensorboard.backend.event_processing.event_file_loader import EventFileLoader, LegacyEventFileLoader
from tensorboard.compat.proto import event_pb2
from tensorboard.plugins.histogram import metadata as histogram_metadata

from runstore import safe_files

try:  # the C implementation (requirements.txt); TensorBoard's pure-Python one is ~100x slower
    from crc32c import crc32c as _crc32c

    def masked_crc32c(data: bytes) -> int:
        """TFRecord's masked CRC-32C of `data`."""
        crc = _crc32c(data)
        return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF

except ImportError:  # pragma: no cover - crc32c is a requirement
    from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import masked_crc32c

# One event's bytes. Images, audio and histograms are far smaller; 4 reading threads (runstore/tb_reads.py),
# each holding one record and its parse, stay well under 1 GB.
MAX_RECORD = 32 * 2**20
# Protobuf fields in one record, sub-messages included. Parsing inflates a record of many tiny fields ~45x
# (7.6 MiB of empty summary values: 340 MiB), so a record's fields are counted before it is parsed: 500,000
# fields are ~45 MB parsed and ~0.4 s to count; a scalar, image or histogram event has a few dozen.
MAX_FIELDS = 500_000
COUNT_FROM = 64 * 2**10  # records smaller than this are parsed without counting (at most ~3 MB parsed)
READ_BUDGET = 16 * 2**20  # bytes read from one file per call (~300,000 scalar events): a huge file shows as it is read
HEADER = 12  # 8-byte length + its 4-byte masked CRC
NOT_INSIDE = "a link leaving the logdir (not followed)"


class DamagedEventFile(Exception):
    """An event file that can never be read further: the message says where and why (no path in it)."""


def open_event_file(path: Path, logdir: Path) -> int:
    """A file descriptor of `path`, a regular file lying inside `logdir`; never blocks, never leaves the logdir.

    A link to a file inside the logdir is read where it points (its target is checked, not its name);
    a link that leaves it, a FIFO, a socket or a device is refused.

    Raises:
      DamagedEventFile: not a regular file, or outside the logdir.
      OSError: the file is gone or cannot be opened.
    """
    target = path
    if stat.S_ISLNK(os.lstat(path).st_mode):
        if not safe_files.inside(logdir, path):
            raise DamagedEventFile(NOT_INSIDE)
        target = Path(os.path.realpath(path))
    try:
        fd = os.open(target, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # swapped for a link since it was checked
            raise DamagedEventFile(NOT_INSIDE) from exc
        raise
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise DamagedEventFile(safe_files.NOT_REGULAR)
        if not safe_files.inside(logdir, _opened_path(fd, target)):  # a folder above swapped for a link
            raise DamagedEventFile(NOT_INSIDE)
        return fd
    except BaseException:
        os.close(fd)
        raise


def _opened_path(fd: int, fallback: Path) -> str:
    """The path of the file `fd` really is (Linux names it in /proc), else the path it was opened by."""
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return str(fallback)


class RecordReader:
    """The TFRecords of one event file, each yielded once, from where the last call stopped.

    A record still being written (its header or data not all in the file yet) is waited for: the
    next call starts at it again. Nothing larger than MAX_RECORD, or than the bytes the file holds,
    is ever allocated; at most READ_BUDGET bytes are read per call.
    """

    def __init__(self, path: Path, logdir: Path) -> None:
        self.path, self.logdir = Path(path), Path(logdir)
        self.offset = 0
        self.more = False  # the last call stopped at READ_BUDGET with complete records left: read again
        self.progress_at = 0.0  # time.monotonic() of the last record read: a slow read still moves, a stalled one not
        self._paused = False  # `pause` was called during this call: no further record is read

    def pause(self) -> None:
        """Stop this call after the record it yielded last (its decoded tensors used their budget); the next
        call reads on from there, as after READ_BUDGET."""
        self._paused = True

    def records(self) -> Iterator[bytes]:
        """The complete records appended since the last call.

        Raises:
          DamagedEventFile: a header or data checksum that does not match, or a length over MAX_RECORD.
          OSError: the file could not be opened.
        """
        fd = open_event_file(self.path, self.logdir)
        try:
            size = os.fstat(fd).st_size
            budget, self.more, self._paused = READ_BUDGET, False, False
            while size - self.offset >= HEADER:
                if budget <= 0 or self._paused:
                    self.more = True
                    return
                data = self._next(fd, size)
                if data is None:
                    return  # the rest of this record is not written yet
                budget -= len(data) + HEADER + 4
                yield data
        finally:
            os.close(fd)

    def _next(self, fd: int, size: int) -> bytes | None:
        """The record at self.offset (the offset moves past it), or None while it is incomplete."""
        at = self.offset
        header = os.pread(fd, HEADER, at)
        if len(header) < HEADER:
            return None
        length, crc = struct.unpack("<QI", header)
        if masked_crc32c(header[:8]) != crc:
            raise DamagedEventFile(f"record at byte {at:,}: its length's checksum does not match")
        if length > MAX_RECORD:
            raise DamagedEventFile(
                f"record at byte {at:,} claims {length:,} bytes, over the {MAX_RECORD // 2**20} MiB limit of one event"
            )
        if size - at - HEADER < length + 4:
            return None  # checked against the bytes the file holds before anything is read
        data, tail = os.pread(fd, length, at + HEADER), os.pread(fd, 4, at + HEADER + length)
        if len(data) < length or len(tail) < 4:
            return None  # the file shrank since fstat
        if masked_crc32c(data) != struct.unpack("<I", tail)[0]:
            raise DamagedEventFile(f"record at byte {at:,}: its data's checksum does not match")
        if length >= COUNT_FROM and count_fields(data, MAX_FIELDS) > MAX_FIELDS:
            raise DamagedEventFile(f"record at byte {at:,} holds over {MAX_FIELDS:,} protobuf fields (not parsed)")
        self.offset = at + HEADER + length + 4
        self.progress_at = time.monotonic()
        return data


def _varint(data: bytes, pos: int, end: int) -> tuple[int, int]:
    """The varint at `pos` and the position after it (end + 1 if it runs past `end`)."""
    value = shift = 0
    while pos < end:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, pos
    return value, end + 1


def count_fields(data: bytes, limit: int) -> int:
    """How many protobuf fields `data` holds, counting into every length-delimited field that parses as a message
    (an over-count for plain bytes, never an under-count); stops once past `limit`. At most limit + 1 steps."""
    count, spans = 0, [(0, len(data))]
    while spans:
        pos, end = spans.pop()
        while pos < end:
            key, pos = _varint(data, pos, end)
            kind = key & 7
            if pos > end or key >> 3 == 0 or kind not in (0, 1, 2, 5):
                break  # not a message: plain bytes
            count += 1
            if count > limit:
                return count
            if kind == 0:
                pos = _varint(data, pos, end)[1]
            elif kind == 2:
                length, pos = _varint(data, pos, end)
                if pos + length > end:
                    break
                if length:
                    spans.append((pos, pos + length))
                pos += length
            else:
                pos += 8 if kind == 1 else 4
    return count


class _Records:
    """The iterator TensorBoard's loader pulls records from: one RecordReader call per Load()."""

    def __init__(self, reader: RecordReader) -> None:
        self.reader = reader
        self._it: Iterator[bytes] | None = None

    def __next__(self) -> bytes:
        if self._it is None:
            self._it = self.reader.records()
        try:
            return next(self._it)
        except BaseException:
            self._it = None  # StopIteration ends this Load(); the next one opens the file again
            raise


def histograms_as_served(event: event_pb2.Event) -> event_pb2.Event:
    """`event` with its legacy histograms (a HistogramProto: tensorboardX, TF1) as TensorBoard's server serves them.

    TensorBoard's default server (its Rust data server) makes every bucket a [left, right, count] row of doubles,
    empty ones included: lefts [min, limit_0, .., limit_k-2], rights [limit_0, .., limit_k-2, max]. The Python
    compat layer that `EventFileLoader` runs (data_compat) drops empty end buckets and rounds to float32, so a
    tensorboardX histogram read through it alone had other buckets and edges than TensorBoard's HTTP API.
    """
    if not event.HasField("summary") or not any(v.HasField("histo") for v in event.summary.value):
        return event
    out = event_pb2.Event()
    out.CopyFrom(event)
    for value in out.summary.value:
        if not value.HasField("histo"):
            continue
        histo = value.histo
        counts, limits = list(histo.bucket), list(histo.bucket_limit)
        k = len(counts) if len(limits) >= len(counts) else 0  # limits missing: no bucket can be placed
        lefts, rights = [histo.min, *limits[: k - 1]], [*limits[: k - 1], histo.max]
        buckets = np.array([lefts, rights, counts], dtype=np.float64).T if k else np.zeros((0, 3))
        meta = histogram_metadata.create_summary_metadata(
            display_name=value.metadata.display_name or value.tag, description=value.metadata.summary_description
        )
        value.CopyFrom(data_compat.make_summary(value.tag, meta, buckets))
    return out


class BoundedEventFileLoader(EventFileLoader):
    """TensorBoard's `EventFileLoader` reading its records through a `RecordReader`.

    `Load()` is TensorBoard's own (events parsed and migrated by its compat layers) but for legacy histograms,
    migrated as TensorBoard's server serves them (`histograms_as_served`), and where the record bytes come
    from. The parent's __init__ is not called: it opens the file by name with TensorBoard's unbounded reader.
    Raises DamagedEventFile / OSError from `Load()`.
    """

    def __init__(self, path: Path, logdir: Path) -> None:  # noqa: D107 - see the class
        self.reader = RecordReader(path, logdir)
        self._file_path = str(path)
        self._detect_file_replacement = False
        self._file_size = None
        self._iterator = _Records(self.reader)
        self._initial_metadata: dict = {}

    def Load(self) -> Iterator[event_pb2.Event]:  # noqa: N802 - TensorBoard's name
        """The events appended since the last call, through TensorBoard's compat layers (`EventFileLoader.Load`)."""
        for event in LegacyEventFileLoader.Load(self):
            event = data_compat.migrate_event(histograms_as_served(event))
            yield from dataclass_compat.migrate_event(event, self._initial_metadata)
