"""tensorboardX event files written in the caller's thread, scalar records built as bytes, and image summaries.

tensorboardX queues events for a background thread that flushes every `flush_secs`, and its
`flush()` does not wait for that queue, so a killed process could lose far more than one chunk.
Writing in the caller's thread and flushing once per chunk bounds the loss. (Install `crc32c` for
fast record checksums; tensorboardX falls back to pure Python.)
"""

from __future__ import annotations

import io
import os
import socket
import struct
import time
from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import Any

import numpy as np
import PIL.Image
from tensorboardX import SummaryWriter
from tensorboardX.crc32c import crc32c
from tensorboardX.proto import event_pb2
from tensorboardX.proto.summary_pb2 import Summary
from tensorboardX.record_writer import masked_crc32c
from tensorboardX.writer import FileWriter


class SyncEventWriter:
    """Drop-in for tensorboardX's EventFileWriter that writes in the caller's thread.

    `flush` hands the bytes to the OS (enough for a killed process: the page cache
    survives it) without tensorboardX's per-flush fsync, which under a busy disk
    cost more than the chunk itself; `close` fsyncs once.
    """

    def __init__(self, logdir: str, filename_suffix: str = ""):
        self._logdir = logdir
        os.makedirs(logdir, exist_ok=True)
        base = os.path.join(
            logdir, f"events.out.tfevents.{int(time.time()):010d}.{socket.gethostname()}{filename_suffix}"
        )
        # A resumed run writes a second file in the same second as a short first one: never overwrite it
        # ("x" mode); the suffixed name sorts after it, which TensorBoard's restart purge relies on.
        for n in range(100):
            try:
                self._f = open(base + (f".{n}" if n else ""), "xb")  # noqa: SIM115 - closed in close()
                break
            except FileExistsError:
                continue
        self._closed = False
        self.add_event(event_pb2.Event(wall_time=time.time(), file_version="brain.Event:2"))

    def get_logdir(self) -> str:
        return self._logdir

    def add_event(self, event: Any) -> None:
        if self._closed:
            return
        # TFRecord framing: length, crc(length), payload, crc(payload).
        data = event.SerializeToString()
        header = struct.pack("Q", len(data))
        self._f.write(header + struct.pack("I", masked_crc32c(header)) + data + struct.pack("I", masked_crc32c(data)))

    def write_records(self, data: bytes) -> None:
        """Append records already framed as `add_event` frames them (e.g. `scalar_records`), in one write."""
        if not self._closed:
            self._f.write(data)

    def flush(self) -> None:
        if not self._closed:
            self._f.flush()

    def close(self) -> None:
        if not self._closed:
            self._f.flush()
            os.fsync(self._f.fileno())
            self._f.close()
            self._closed = True

    def reopen(self) -> None:  # part of the EventFileWriter interface; one file per writer here
        pass


_U32 = struct.Struct("<I")


def _varint(n: int) -> bytes:
    """Protobuf's varint of an int64: a negative one as its 64-bit two's complement (10 bytes)."""
    n &= 0xFFFFFFFFFFFFFFFF
    out = bytearray()
    while n > 0x7F:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


@lru_cache(maxsize=1024)
def _record_header(length: int) -> bytes:
    """A TFRecord's head: the payload length and the masked crc32c of those 8 bytes."""
    header = struct.pack("<Q", length)
    return header + struct.pack("<I", masked_crc32c(header))


def _value_prefix(tag: str) -> bytes:
    """An Event's `summary` field up to the float: Summary{value: [Value{tag, simple_value key}]}."""
    name = tag.encode()
    value = b"\x0a" + _varint(len(name)) + name + b"\x15"  # Value.tag (1, bytes); simple_value (2, fixed32) key
    value_len = len(value) + 4  # the float32 follows
    summary_len = 1 + len(_varint(value_len)) + value_len
    return b"\x2a" + _varint(summary_len) + b"\x0a" + _varint(value_len) + value  # Event.summary (5), Summary.value (1)


def _float32_bytes(column: Any, n: int) -> bytes:
    """The first n values as little-endian float32, cast as protobuf casts a double (out of range: inf)."""
    values = np.asarray(column, dtype=np.float64)
    if values.ndim != 1 or len(values) < n:
        raise ValueError(f"a column of {n} values expected, got shape {values.shape}")
    with np.errstate(over="ignore"):
        return values[:n].astype("<f4").tobytes()


def scalar_records(steps: list[int], columns: Mapping[str, Any] | Iterable[tuple[str, Any]], wall_time: float) -> bytes:
    """Framed scalar events of a block, step by step and tag by tag in each step, as `add_event` writes them.

    Each record holds exactly the bytes of `Event(wall_time=wall_time, step=step,
    summary=Summary(value=[Summary.Value(tag=tag, simple_value=value)])).SerializeToString()`.
    `columns` maps each tag (as written, already cleaned) to at least `len(steps)` values; pairs
    keep two columns under one tag.
    """
    pairs = list(columns.items() if isinstance(columns, Mapping) else columns)
    wall = struct.pack("<d", wall_time)
    wall = b"\x09" + wall if wall != bytes(8) else b""  # Event.wall_time (1, fixed64); proto3 omits 0.0
    heads = [wall + b"\x10" + _varint(s) if s else wall for s in steps]  # Event.step (2, varint); 0 omitted
    tags = [(_value_prefix(tag), _float32_bytes(column, len(steps))) for tag, column in pairs]
    out: list[bytes] = []
    pack = _U32.pack
    for i, head in enumerate(heads):
        for prefix, floats in tags:
            payload = head + prefix + floats[4 * i : 4 * i + 4]
            crc = crc32c(payload)
            crc = (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF  # masked as TFRecord masks it
            out += (_record_header(len(payload)), payload, pack(crc))
    return b"".join(out)


class SyncFileWriter(FileWriter):
    def __init__(self, logdir: str, filename_suffix: str = ""):
        # FileWriter.__init__ is skipped on purpose: it starts the async queue thread.
        self.event_writer = SyncEventWriter(str(logdir), filename_suffix)
        self._default_metadata = {}


class SyncSummaryWriter(SummaryWriter):
    def _get_file_writer(self) -> FileWriter:
        if self.all_writers is None or self.file_writer is None:
            self.file_writer = SyncFileWriter(self.logdir, self._filename_suffix)
            if self.purge_step is not None:  # as tensorboardX does: readers drop older events from this step on
                self.file_writer.add_event(event_pb2.Event(step=self.purge_step, file_version="brain.Event:2"))
                start = event_pb2.SessionLog(status=event_pb2.SessionLog.START)
                self.file_writer.add_event(event_pb2.Event(step=self.purge_step, session_log=start))
            self.all_writers = {self.file_writer.get_logdir(): self.file_writer}
        return self.file_writer


def image_summary(tag: str, img: np.ndarray) -> Summary:
    """HWC uint8 image as an image summary, PNG at low compression.

    tensorboardX's `add_image` uses PIL's default level 6, about 3x slower for
    files only ~20% smaller; this runs inside the training loop.
    """
    arr = np.asarray(img)
    if arr.dtype != np.uint8:
        arr = np.clip(arr * (255.0 if arr.max() <= 1.0 else 1.0), 0, 255).astype(np.uint8)
    if arr.ndim == 2:
        arr = arr[..., None]
    buf = io.BytesIO()
    PIL.Image.fromarray(arr[..., 0] if arr.shape[-1] == 1 else arr).save(buf, format="PNG", compress_level=1)
    h, w, c = arr.shape
    return Summary(
        value=[
            Summary.Value(
                tag=tag, image=Summary.Image(height=h, width=w, colorspace=c, encoded_image_string=buf.getvalue())
            )
        ]
    )
