"""TensorBoard backend (tensorboardX): scalars, images, histograms, config text and HParams.

Two deliberate departures from tensorboardX defaults:

* Events are written synchronously. tensorboardX queues events for a
  background thread that flushes every `flush_secs`, and its `flush()` does not
  wait for that queue, so a killed process could lose far more than one chunk.
  Writing in the caller's thread and flushing once per chunk bounds the loss.
  (Install `crc32c` for fast record checksums; tensorboardX falls back to pure Python.)
* HParams go into the run's own event file as a session-start/-end pair and no
  experiment summary. `add_hparams` writes a timestamped sub-run instead, and
  TensorBoard picks one experiment summary arbitrarily across runs, which would
  hide the hparams of other tasks. Without one, TensorBoard builds the HParams
  table from every run's session info and scalars: one row per run.
"""

from __future__ import annotations

import io
import logging
import os
import socket
import struct
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import PIL.Image
from tensorboardX import SummaryWriter
from tensorboardX.proto import api_pb2, event_pb2, plugin_hparams_pb2
from tensorboardX.proto.summary_pb2 import Summary, SummaryMetadata
from tensorboardX.record_writer import masked_crc32c
from tensorboardX.summary import hparams as hparams_summary
from tensorboardX.writer import FileWriter

from training.writers.base import MetricWriter, Progress, Table

log = logging.getLogger(__name__)

_END_STATUS = {
    "finished": "STATUS_SUCCESS",
    "stopped": "STATUS_SUCCESS",
    "failed": "STATUS_FAILURE",
    "diverged": "STATUS_FAILURE",
}


class _SyncEventWriter:
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


class _SyncFileWriter(FileWriter):
    def __init__(self, logdir: str, filename_suffix: str = ""):
        # FileWriter.__init__ is skipped on purpose: it starts the async queue thread.
        self.event_writer = _SyncEventWriter(str(logdir), filename_suffix)
        self._default_metadata = {}


class _SyncSummaryWriter(SummaryWriter):
    def _get_file_writer(self) -> FileWriter:
        if self.all_writers is None or self.file_writer is None:
            self.file_writer = _SyncFileWriter(self.logdir, self._filename_suffix)
            if self.purge_step is not None:  # as tensorboardX does: readers drop older events from this step on
                self.file_writer.add_event(event_pb2.Event(step=self.purge_step, file_version="brain.Event:2"))
                start = event_pb2.SessionLog(status=event_pb2.SessionLog.START)
                self.file_writer.add_event(event_pb2.Event(step=self.purge_step, session_log=start))
            self.all_writers = {self.file_writer.get_logdir(): self.file_writer}
        return self.file_writer


def flatten_hparams(config: Mapping[str, Any], prefix: str = "") -> dict[str, bool | str | float]:
    """Config as HParams values: lists become "a,b" strings, nested dicts dotted keys, None is left out.

    None is dropped rather than stringified so a field keeps one type across runs
    (TensorBoard's HParams table cannot mix a number column with "none").
    """
    out: dict[str, bool | str | float] = {}
    for k, v in config.items():
        key = f"{prefix}{k}"
        if isinstance(v, Mapping):
            out.update(flatten_hparams(v, key + "."))
        elif isinstance(v, (list, tuple)):
            out[key] = ",".join(map(str, v))
        elif v is None:
            continue
        elif isinstance(v, (bool, str)):
            out[key] = v
        elif isinstance(v, (int, float, np.integer, np.floating)):
            out[key] = float(v)
        else:
            out[key] = str(v)
    return out


def _image_summary(tag: str, img: np.ndarray) -> Summary:
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


def _markdown_table(hp: Mapping[str, Any]) -> str:
    rows = "\n".join(f"| {k} | {v} |" for k, v in hp.items())
    return "| setting | value |\n| --- | --- |\n" + rows


class TensorBoardWriter(MetricWriter):
    """Writes one run's event file under `logdir` (normally `<run_dir>/tb`).

    Args:
      logdir: directory for the event file.
      run_name: shown in the config text.
      resume_step: continue this logdir after a checkpoint at this step (TensorBoard drops later events).
    """

    def __init__(
        self,
        logdir: str | Path,
        run_name: str | None = None,
        resume_step: int | None = None,
    ):
        self.logdir = Path(logdir)
        self.run_name = run_name
        # Resuming from a checkpoint at step S: events a killed process wrote after S are purged.
        purge = None if resume_step is None else int(resume_step) + 1
        self.sw = _SyncSummaryWriter(logdir=str(self.logdir), purge_step=purge)
        self._tables: dict[str, tuple[int, Table]] = {}
        self._step = int(resume_step or 0)
        self._hparams: dict[str, bool | str | float] = {}
        self._closed = False

    def write_hparams(self, hparams: Mapping[str, Any]) -> None:
        """Session start (so even a crashed run has its HParams row) and a config text table."""
        self._hparams = flatten_hparams(hparams)
        _, ssi, _ = hparams_summary(self._hparams, {})
        self.sw.file_writer.add_summary(ssi)
        title = f"**{self.run_name}**\n\n" if self.run_name else ""
        self.sw.add_text("config", title + _markdown_table(self._hparams), 0)

    def write_scalars(self, step: int, scalars: Mapping[str, float], progress: Progress | None = None) -> None:
        """One scalar event per tag; NaN/inf are kept (TensorBoard shows them)."""
        self._step = max(self._step, int(step))
        for tag, value in scalars.items():
            self.sw.add_scalar(tag, float(np.asarray(value)), int(step))

    def write_images(self, step: int, images: Mapping[str, np.ndarray]) -> None:
        """HWC uint8 images."""
        for tag, img in images.items():
            self._add_image(tag, img, step)

    def _add_image(self, tag: str, img: np.ndarray, step: int) -> None:
        self.sw.file_writer.add_summary(_image_summary(tag, img), int(step))

    def write_histograms(self, step: int, arrays: Mapping[str, np.ndarray]) -> None:
        """Histograms of arrays (e.g. layer weights)."""
        for tag, arr in arrays.items():
            self.sw.add_histogram(tag, np.asarray(arr, dtype=np.float64).ravel(), int(step))

    def write_texts(self, step: int, texts: Mapping[str, str]) -> None:
        """Markdown text."""
        for tag, text in texts.items():
            self.sw.add_text(tag, text, int(step))

    def write_tables(self, step: int, tables: Mapping[str, Table]) -> None:
        """Kept until close, then the latest of each tag as Markdown text (TensorBoard has no table plugin)."""
        self._tables.update({tag: (int(step), table) for tag, table in tables.items()})

    def _write_tables(self) -> None:
        for tag, (step, table) in self._tables.items():
            if len(table.rows) <= 100 and not any(isinstance(c, list) for row in table.rows for c in row):
                head = "| " + " | ".join(table.columns) + " |\n|" + " --- |" * len(table.columns)
                body = "\n".join("| " + " | ".join(map(str, row)) + " |" for row in table.rows)
                self.sw.add_text(tag, f"{head}\n{body}", int(step))

    def write_summary(self, metrics: Mapping[str, float]) -> None:
        """Final metrics as "hparam/<tag>" scalars at the last step: the HParams table's metric columns.

        A separate prefix (tensorboardX's convention) because a final value can differ
        from the last logged point of the same tag (e.g. an epoch mean vs a chunk mean),
        and a second point at the same step would garble that tag's curve.
        """
        for tag, v in metrics.items():
            self.sw.add_scalar(f"hparam/{tag}", float(np.asarray(v)), self._step)

    def flush(self) -> None:
        """Push the chunk's events to the file."""
        self.sw.file_writer.flush()

    def close(self, state: str = "finished", message: str | None = None) -> None:
        """Last fit image, session end with its status, then close the file."""
        if self._closed:
            return
        self._write_tables()
        if message:
            self.sw.add_text("run/message", f"{state}: {message}", self._step)
        sei = plugin_hparams_pb2.SessionEndInfo(status=api_pb2.Status.Value(_END_STATUS.get(state, "STATUS_UNKNOWN")))
        content = plugin_hparams_pb2.HParamsPluginData(session_end_info=sei, version=0).SerializeToString()
        meta = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name="hparams", content=content))
        self.sw.file_writer.add_summary(Summary(value=[Summary.Value(tag="_hparams_/session_end_info", metadata=meta)]))
        self.sw.close()
        self._closed = True
