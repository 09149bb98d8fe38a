"""Background writes, added by wrapping as CLU's `AsyncWriter(writer)`: `BackgroundWrites(RunStoreWriter(d))`.

A chunk's writes (append + fsync of metrics.jsonl, atomic replace + fsync of status.json) took 1-10 ms on a
busy shared disk, as much as 20% of a chunk. `BackgroundWrites` runs them on one background thread,
double-buffered: `flush` first waits for the previous chunk's writes, then takes this chunk from the writer
(`take_chunk`, in the caller's thread, cheap) and hands its writes (`write_chunk`) to the thread and returns.
So the fsyncs overlap the next chunk's compute, and a killed process still loses at most the chunk in flight.
`drain()` (and `close`) wait for the writes; a failed write is raised by the next `flush`, `drain` or `close`.
Every other call goes straight to the wrapped writer, in the caller's thread, and its attributes (`run_dir`)
are the wrapper's.
"""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Protocol

import numpy as np

from runwriters.base import Chart, MetricWriter, Progress, Table


class ChunkWriter(Protocol):
    """A writer whose `flush` is `write_chunk(take_chunk())` (`runwriters.store.RunStoreWriter`)."""

    def take_chunk(self) -> Any | None:
        """What was buffered since the last chunk, out of the buffer; None when nothing changed."""

    def write_chunk(self, chunk: Any) -> None:
        """Write a chunk taken by `take_chunk`; raises a failed write."""


class BackgroundWrites(MetricWriter):
    """`writer`, its chunks written on one background thread, double-buffered.

    Args:
      writer: a `MetricWriter` that is a `ChunkWriter` (the run store); it is not used by anyone else.
    """

    def __init__(self, writer: Any) -> None:
        self.writer = writer
        self._pool: ThreadPoolExecutor | None = ThreadPoolExecutor(1, thread_name_prefix="run-store")
        self._pending: Future | None = None

    def __getattr__(self, name: str) -> Any:
        """Any other attribute is the writer's (`run_dir`: jaxdash.log_media finds the run folder by it)."""
        if name == "writer":  # not set yet (copying, unpickling): never recurse
            raise AttributeError(name)
        return getattr(self.writer, name)

    def flush(self) -> None:
        """Hand this chunk's writes to the thread, after the previous chunk's landed (raising its failure)."""
        self.drain()
        chunk = self.writer.take_chunk()
        if chunk is None:
            return
        if self._pool is None:  # closed: write in the caller's thread
            self.writer.write_chunk(chunk)
        else:
            self._pending = self._pool.submit(self.writer.write_chunk, chunk)

    def drain(self) -> None:
        """Wait until everything flushed so far is on disk; re-raises a failed write."""
        pending, self._pending = self._pending, None
        if pending is not None:
            pending.result()

    def write_summary(self, metrics: Mapping[str, float]) -> None:
        """The writer's, after the chunk in flight (status.json is read-modify-write: its progress lands first)."""
        self.drain()
        self.writer.write_summary(metrics)

    def close(self, state: str = "finished", message: str | None = None) -> None:
        """Write what is left, stop the thread, then close the writer (even when a write failed)."""
        try:
            self.flush()
            self.drain()
        finally:
            if self._pool is not None:
                self._pool.shutdown(wait=True)
                self._pool = None
            self.writer.close(state, message)

    # -- every other call: the writer's, in the caller's thread -------------------------------------------
    def write_hparams(self, hparams: Mapping[str, Any]) -> None:  # noqa: D102 - as MetricWriter's
        self.writer.write_hparams(hparams)

    def write_scalars(self, step: int, scalars: Mapping[str, float], progress: Progress | None = None) -> None:  # noqa: D102
        self.writer.write_scalars(step, scalars, progress)

    def write_scalar_rows(  # noqa: D102
        self, steps: np.ndarray, columns: Mapping[str, np.ndarray], progress: Progress | None = None
    ) -> None:
        self.writer.write_scalar_rows(steps, columns, progress)

    def write_images(self, step: int, images: Mapping[str, np.ndarray]) -> None:  # noqa: D102
        self.writer.write_images(step, images)

    def write_histograms(self, step: int, arrays: Mapping[str, np.ndarray]) -> None:  # noqa: D102
        self.writer.write_histograms(step, arrays)

    def write_texts(self, step: int, texts: Mapping[str, str]) -> None:  # noqa: D102
        self.writer.write_texts(step, texts)

    def write_values(self, step: int, values: Mapping[str, Any]) -> None:  # noqa: D102
        self.writer.write_values(step, values)

    def write_pr_curves(self, step: int, curves: Mapping[str, tuple[np.ndarray, np.ndarray]]) -> None:  # noqa: D102
        self.writer.write_pr_curves(step, curves)

    def write_tables(self, step: int, tables: Mapping[str, Table]) -> None:  # noqa: D102
        self.writer.write_tables(step, tables)

    def write_figures(self, step: int, figures: Mapping[str, dict[str, Any]]) -> None:  # noqa: D102
        self.writer.write_figures(step, figures)

    def write_charts(self, step: int, charts: Mapping[str, Chart]) -> None:  # noqa: D102
        self.writer.write_charts(step, charts)
