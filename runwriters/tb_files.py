"""tensorboardX event files written in the caller's thread, and image summaries.

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
from typing import Any

import numpy as np
import PIL.Image
from tensorboardX import SummaryWriter
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
