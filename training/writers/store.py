"""Run-store backend: metrics.jsonl, the progress fields of status.json, and artifacts/.

This is the writer the dashboard reads, so it is built first and kept cheap:
scalars are buffered in memory and written once per `flush`, i.e. once per chunk.

The writes (append + fsync of metrics.jsonl, atomic replace + fsync of
status.json) run on one background thread, double-buffered: `flush` first waits
for the previous chunk's writes, then hands over this chunk's and returns. The
fsyncs took 1-10 ms per chunk on a busy shared disk, as much as 20% of a chunk;
this way they overlap the next chunk's compute, and a killed process still
loses at most the chunk in flight. `drain()` (and `close`) wait for the writes.
Lifecycle fields of status.json (state, ended, message) belong to `training.run`;
every status.json write of this writer happens before `close` returns, so it
never races run.py's final one.
"""

from __future__ import annotations

import io
import logging
import time
from collections.abc import Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from training import run_store
from training.writers.base import ClassificationReport, MetricWriter, Progress, RegressionSnapshot

log = logging.getLogger(__name__)

_PROGRESS_FIELDS = (
    "step", "total_steps", "epoch", "total_epochs", "wall_seconds", "compile_seconds", "steps_per_sec", "phase",
)


def _float(v: Any) -> float:
    """Plain Python float (numpy / JAX scalars included) so json never sees an array."""
    return float(np.asarray(v))


class RunStoreWriter(MetricWriter):
    """Writes a run's metrics and artifacts into its run directory.

    Args:
      run_dir: an existing run directory (see `training.run_store`).
    """

    def __init__(self, run_dir: str | Path):
        self.run_dir = Path(run_dir)
        self.artifacts = self.run_dir / "artifacts"
        self.artifacts.mkdir(parents=True, exist_ok=True)
        self._t0 = time.monotonic()
        self._wall_at = (0.0, self._t0)  # (last progress.wall_seconds, monotonic time it arrived)
        self._buffer: list[dict[str, Any]] = []
        self._progress: Progress | None = None
        self._progress_dirty = False
        self._wrote_sample = False
        self._pool: ThreadPoolExecutor | None = ThreadPoolExecutor(1, thread_name_prefix="run-store")
        self._pending: Future | None = None

    # -- scalars and progress ----------------------------------------------------------
    def write_scalars(self, step: int, scalars: Mapping[str, float], progress: Progress | None = None) -> None:
        """Buffer one record; it reaches metrics.jsonl at the next `flush`."""
        now = time.monotonic()
        if progress is not None:
            wall = float(progress.wall_seconds)
            self._wall_at = (wall, now)
        else:  # e.g. an eval record: continue the training clock rather than start a second one
            wall = self._wall_at[0] + (now - self._wall_at[1])
        record: dict[str, Any] = {"step": int(step), "wall": round(float(wall), 4), "ts": time.time()}
        record.update({str(k): _float(v) for k, v in scalars.items()})
        self._buffer.append(record)
        if progress is not None:
            self._progress = progress
            self._progress_dirty = True

    def flush(self) -> None:
        """Hand this chunk's records and progress to the writer thread (after the previous chunk's landed)."""
        self.drain()
        records, self._buffer = self._buffer, []
        fields = None
        if self._progress_dirty and self._progress is not None:
            p = self._progress
            fields = {k: getattr(p, k) for k in _PROGRESS_FIELDS}
            fields = {
                k: (v if v is None or isinstance(v, str) else int(v) if isinstance(v, int) else float(v))
                for k, v in fields.items()
            }
            self._progress_dirty = False
        if not records and not fields:
            return
        if self._pool is None:  # closed: write in the caller's thread
            self._write(records, fields)
        else:
            self._pending = self._pool.submit(self._write, records, fields)

    def _write(self, records: list[dict[str, Any]], fields: dict[str, Any] | None) -> None:
        run_store.append_metrics(self.run_dir, records)
        if fields:
            run_store.write_status(self.run_dir, **fields)

    def drain(self) -> None:
        """Wait until everything flushed so far is on disk; re-raises a failed write."""
        pending, self._pending = self._pending, None
        if pending is not None:
            pending.result()

    # -- artifacts ---------------------------------------------------------------------
    def write_regression(self, step: int, snap: RegressionSnapshot) -> None:
        """Data sample once (it never changes), then the latest fit on every call."""
        if not self._wrote_sample:
            run_store.atomic_write_json(
                self.artifacts / "data_sample.json",
                {
                    "x": np.asarray(snap.x, dtype=float).tolist(),
                    "y": np.asarray(snap.y, dtype=float).tolist(),
                    "true_weight": _float(snap.true_weight),
                    "true_bias": _float(snap.true_bias),
                },
            )
            self._wrote_sample = True
        run_store.atomic_write_json(
            self.artifacts / "fit.json", {"step": int(step), "weight": _float(snap.weight), "bias": _float(snap.bias)}
        )

    def write_classification(self, step: int, report: ClassificationReport) -> None:
        """Confusion matrix + sample predictions as JSON, sample images as npz."""
        labels = np.asarray(report.labels).astype(int)
        preds = np.asarray(report.preds).astype(int)
        run_store.atomic_write_json(
            self.artifacts / "classification.json",
            {
                "class_names": [str(c) for c in report.class_names],
                "confusion": np.asarray(report.confusion).astype(int).tolist(),
                "labels": labels.tolist(),
                "preds": preds.tolist(),
                "step": int(step),
            },
        )
        # Same replace-on-write discipline as the JSON files: a reader never sees half an npz.
        buf = io.BytesIO()
        np.savez_compressed(buf, images=np.asarray(report.images).astype(np.uint8), labels=labels, preds=preds)
        _atomic_write_bytes(self.artifacts / "samples.npz", buf.getvalue())

    def write_images(self, step: int, images: Mapping[str, np.ndarray]) -> None:
        """Optional PNG copies under artifacts/images/ (skipped if Pillow is missing)."""
        try:
            from PIL import Image
        except ImportError:  # Pillow is optional; TB and W&B still get the images
            return
        out = self.artifacts / "images"
        out.mkdir(exist_ok=True)
        for tag, img in images.items():
            buf = io.BytesIO()
            Image.fromarray(np.asarray(img, dtype=np.uint8)).save(buf, format="PNG")
            _atomic_write_bytes(out / f"{run_store.slugify(tag.replace('/', '_'), 80)}_{int(step)}.png", buf.getvalue())

    def write_summary(self, metrics: Mapping[str, float]) -> None:
        """Final metrics: status.json "final" and artifacts/final_metrics.json."""
        final = {str(k): _float(v) for k, v in metrics.items()}
        self.drain()  # status.json is read-modify-write: never alongside the writer thread
        run_store.atomic_write_json(self.artifacts / "final_metrics.json", final)
        run_store.write_status(self.run_dir, final=final)

    def close(self, state: str = "finished", message: str | None = None) -> None:
        """Write what is left and stop the writer thread; lifecycle fields are `training.run`'s."""
        try:
            self.flush()
            self.drain()
        finally:
            if self._pool is not None:
                self._pool.shutdown(wait=True)
                self._pool = None


def _atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write-then-rename so a polling reader never opens a half-written file."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(data)
    tmp.replace(path)
