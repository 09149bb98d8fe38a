"""Run-store backend: metrics.jsonl, the progress fields of status.json, and artifacts/ (media).

This is the writer the dashboard reads, so it is built first and kept cheap:
scalars are buffered in memory and written once per `flush`, i.e. once per chunk.

`flush` writes in the caller's thread: it takes this chunk out of the buffer (`take_chunk`) and writes it
(`write_chunk`: append + fsync of metrics.jsonl, atomic replace + fsync of status.json). Behaviour around the
writes is added by wrapping, as CLU's `AsyncWriter(writer)`: the engine and the client write through
`BackgroundWrites(RunStoreWriter(...))` (runwriters/async_writer.py), which runs each `write_chunk` on one
background thread, double-buffered, so the fsyncs overlap the next chunk's compute. The writes themselves go
through a `RecordFile`; the client wraps it in `RetryingRecordFile` (runwriters/store_retry.py) to keep and
retry a failed write instead of raising it.
Lifecycle fields of status.json (state, ended, message) belong to `training.runs.run`;
every status.json write of this writer happens before `close` returns, so it
never races run.py's final one.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from runstore import atomic, media_store, nofollow, run_folder, run_store
from runstore.run_folder import RunFolder
from runstore.safe_files import UnsafePath
from runwriters.base import Bins, Images, MetricWriter, Progress, Table

log = logging.getLogger(__name__)

KEEP_FIGURES = 50  # steps of each figure tag kept for the page's step slider

_PROGRESS_FIELDS = (
    "step",
    "total_steps",
    "epoch",
    "total_epochs",
    "wall_seconds",
    "compile_seconds",
    "steps_per_sec",
    "phase",
)


def _float(v: Any) -> float:
    """Plain Python float (numpy / JAX scalars included) so json never sees an array."""
    return float(np.asarray(v))


@dataclasses.dataclass
class Chunk:
    """What one `flush` writes: the buffered records (dicts) and column blocks (their lines, formatted as they
    came), in order, and the progress fields for status.json (None when they did not change)."""

    items: list[dict[str, Any] | str]
    fields: dict[str, Any] | None


class RecordFile:
    """Where a `RunStoreWriter` puts what it flushed: metrics.jsonl lines and status.json's progress
    fields, each written at once; a failed write raises (and ends the run through its writer).

    The writer takes any object with these three methods (`RunStoreWriter(run_dir, files=...)`), so behaviour
    around the writes is added by wrapping one, as CLU's `AsyncWriter` wraps a writer: the client's run store is
    `RunStoreWriter(run_dir, files=RetryingRecordFile(RecordFile(run_dir)))` (`runwriters.store_retry`), which
    keeps the lines of a failed write (a full disk) in memory and retries them instead of raising.
    """

    def __init__(self, run_dir: str | Path) -> None:
        self.run_dir = Path(run_dir)

    def append(self, lines: str) -> None:
        """Append whole metrics.jsonl lines (`runstore.atomic.metric_lines`), fsync'd; "" writes nothing."""
        RunFolder(self.run_dir).append_record_lines(lines)

    def write_progress(self, fields: dict[str, Any]) -> None:
        """Merge progress fields (step, steps/s, the count of keys, ...) into status.json."""
        RunFolder(self.run_dir).write_status(**fields)

    def close(self) -> None:
        """Nothing waits: every write happened in its call."""


class RunStoreWriter(MetricWriter):
    """Writes a run's metrics and artifacts into its run directory.

    Args:
      run_dir: an existing run directory (see `runstore.run_store`).
      files: where the flushed metrics.jsonl lines and progress fields go (default `RecordFile(run_dir)`,
        which raises a failed write); a wrapper of it adds behaviour, as `RetryingRecordFile`.
    """

    def __init__(self, run_dir: str | Path, files: RecordFile | None = None):
        self.run_dir = Path(run_dir)
        self.files = files if files is not None else RecordFile(self.run_dir)
        self.artifacts = RunFolder(self.run_dir).artifacts
        self.run_dir.mkdir(parents=True, exist_ok=True)  # the run folder itself: the anchor every write starts from
        try:
            nofollow.make_folder(self.run_dir, self.artifacts)  # never entered through a link planted in the folder
        except UnsafePath as exc:  # the scalars still go to metrics.jsonl; each media write refuses in one line
            log.warning("%s", exc)
        self._t0 = time.monotonic()
        self._wall_at = (0.0, self._t0)  # (last progress.wall_seconds, monotonic time it arrived)
        self._buffer: list[dict[str, Any] | str] = []
        self._progress: Progress | None = None
        self._progress_dirty = False
        self._keys: set[str] = set()  # every scalar key written: a new one is news the page reruns for at once
        self._keys_dirty = False

    # -- scalars and progress ----------------------------------------------------------
    def write_scalars(self, step: int, scalars: Mapping[str, float], progress: Progress | None = None) -> None:
        """Buffer one record; it reaches metrics.jsonl at the next `flush`."""
        wall = self._wall(progress)  # an eval record continues the training clock rather than start a second one
        record: dict[str, Any] = {"step": int(step), "wall": round(float(wall), 4), "ts": time.time()}
        record.update({str(k): _float(v) for k, v in scalars.items()})
        self._buffer.append(record)
        self._note_keys(scalars)
        if progress is not None:
            self._progress = progress
            self._progress_dirty = True

    def write_scalar_rows(
        self, steps: np.ndarray, columns: Mapping[str, np.ndarray], progress: Progress | None = None
    ) -> None:
        """Buffer a block of steps as columns (one wall time for the block), as its metrics.jsonl lines: formatted
        here, in the caller's thread, where a client's blocks come a fetch at a time (~0.5 us a row, ~0.1 ms a
        block), rather than all of a flush's at once on the writing thread, whose hold of the GIL the training
        thread waits out."""
        if not len(steps):
            return
        wall = self._wall(progress)
        cols = {str(k): np.asarray(v, dtype=np.float64).tolist() for k, v in columns.items()}
        self._buffer.append(
            atomic.column_lines(np.asarray(steps).astype(int).tolist(), round(wall, 4), time.time(), cols)
        )
        self._note_keys(cols)
        if progress is not None:
            self._progress = progress
            self._progress_dirty = True

    def _note_keys(self, scalars: Mapping[str, Any]) -> None:
        if not self._keys.issuperset(scalars):
            self._keys.update(str(k) for k in scalars)
            self._keys_dirty = True

    def _wall(self, progress: Progress | None) -> float:
        """The run's clock: `progress`'s wall time, else the last one continued (e.g. for an eval record)."""
        now = time.monotonic()
        if progress is not None:
            self._wall_at = (float(progress.wall_seconds), now)
            return self._wall_at[0]
        return self._wall_at[0] + (now - self._wall_at[1])

    def flush(self) -> None:
        """Write this chunk's records and progress, in the caller's thread (`take_chunk`, then `write_chunk`)."""
        chunk = self.take_chunk()
        if chunk is not None:
            self.write_chunk(chunk)

    def take_chunk(self) -> Chunk | None:
        """Take what was buffered since the last chunk: the records and the changed progress fields (None when
        nothing changed). Cheap; the caller's thread (`BackgroundWrites` writes the chunk on its own thread)."""
        items, self._buffer = self._buffer, []
        fields = None
        if self._progress_dirty and self._progress is not None:
            p = self._progress
            fields = {k: getattr(p, k) for k in _PROGRESS_FIELDS}
            fields = {
                k: (v if v is None or isinstance(v, str) else int(v) if isinstance(v, int) else float(v))
                for k, v in fields.items()
            }
            self._progress_dirty = False
        if self._keys_dirty:  # status.json's "keys": the count of scalar keys, so a page sees a new key at once
            fields = {**(fields or {}), "keys": len(self._keys)}
            self._keys_dirty = False
        if not items and not fields:
            return None
        return Chunk(items, fields)

    def write_chunk(self, chunk: Chunk) -> None:
        """Write a chunk: its records as metrics.jsonl lines (`runstore.atomic`), then its progress fields, through
        `self.files` (each chunk calls `append`, even with no lines: a wrapper may retry then); raises a failed
        write (`RecordFile`'s)."""
        self.files.append(_lines(chunk.items))
        if chunk.fields:
            self.files.write_progress(chunk.fields)

    # -- artifacts ---------------------------------------------------------------------
    def _reached(self, step: int) -> None:
        """A row of media, tables or texts alone moves the run's step too: status.json's "step" is the last step
        logged of any kind (W&B's `_step`), not only of scalars (written at the next `flush`)."""
        step = int(step)
        if self._progress is None:
            self._progress = Progress(step=step, total_steps=0)
        elif step > self._progress.step:
            self._progress = dataclasses.replace(self._progress, step=step)
        else:
            return
        self._progress_dirty = True

    def write_tables(self, step: int, tables: Mapping[str, Table]) -> None:
        """The latest table of each tag as artifacts/tables/<tag>.json (what the page draws fits and reports from)."""
        self._reached(step)

        def one(tag: str, table: Table) -> None:
            doc = {"tag": tag, "step": int(step), "columns": list(table.columns), "rows": table.rows}
            path = RunFolder(self.run_dir).media_dir(run_folder.TABLES) / f"{media_store.tag_file(tag)}.json"
            run_store.atomic_write_json(path, doc, indent=None, root=self.run_dir)

        _each_tag(tables, one)

    def write_images(self, step: int, images: Mapping[str, np.ndarray | Images]) -> None:
        """Every image of each tag at this step, with captions, and the latest as artifacts/images/<tag>.png
        (runstore.media_store; skipped if Pillow is missing)."""
        self._reached(step)
        try:
            import PIL  # noqa: F401 - optional; TB and W&B still get the images
        except ImportError:
            return

        def one(tag: str, img: np.ndarray | Images) -> None:
            pixels, captions = (img.pixels, img.captions) if isinstance(img, Images) else ([img], [])
            pngs = [media_store.png_bytes(p) for p in pixels]
            media_store.write_image_step(self.run_dir, tag, step, pngs, captions)

        _each_tag(images, one)

    def write_figures(self, step: int, figures: Mapping[str, dict[str, Any]]) -> None:
        """Each figure as artifacts/figures/<tag>/<step>.json (plotly JSON); the newest KEEP_FIGURES steps are kept."""
        self._reached(step)
        import plotly.utils  # plotly's encoder turns NumPy arrays inside a figure into lists

        def one(tag: str, fig: dict[str, Any]) -> None:
            out = RunFolder(self.run_dir).media_dir(run_folder.FIGURES) / media_store.tag_file(tag)
            data = json.dumps({"tag": tag, "step": int(step), "figure": fig}, cls=plotly.utils.PlotlyJSONEncoder)
            atomic.atomic_write_bytes(out / f"{int(step):010d}.json", data.encode(), root=self.run_dir)
            kept = sorted(n for n in nofollow.names(self.run_dir, out) if n.endswith(".json"))
            for old in kept[:-KEEP_FIGURES]:  # bounded: a long run keeps its recent steps
                nofollow.remove(self.run_dir, out / old)

        _each_tag(figures, one)

    def write_texts(self, step: int, texts: Mapping[str, str]) -> None:
        """The latest text of each tag in artifacts/texts.json."""
        self._reached(step)
        path = RunFolder(self.run_dir).texts_latest_path
        doc = run_store.read_json(path, {}) or {}
        doc.update({tag: {"step": int(step), "text": str(text)} for tag, text in texts.items()})
        run_store.atomic_write_json(path, doc, root=self.run_dir)

    def write_values(self, step: int, values: Mapping[str, Any]) -> None:
        """Each tag's value at this step as a line of artifacts/values/<tag>.jsonl (runstore.media_store)."""
        self._reached(step)
        _each_tag(values, lambda tag, value: media_store.append_value(self.run_dir, tag, step, value))

    def write_hparams(self, hparams: Mapping[str, Any]) -> None:
        """Nothing to do: config.json already holds the config."""

    def write_histograms(self, step: int, arrays: Mapping[str, np.ndarray | Bins]) -> None:
        """Each tag's bins at this step as a line of artifacts/histograms/<tag>.jsonl (runstore.media_store)."""
        self._reached(step)

        def one(tag: str, arr: np.ndarray | Bins) -> None:
            found = (arr.counts, arr.edges) if isinstance(arr, Bins) else media_store.bins(arr, media_store.RAW_BINS)
            if found is not None:
                media_store.append_histogram(self.run_dir, tag, step, *found)

        _each_tag(arrays, one)

    def write_summary(self, metrics: Mapping[str, float]) -> None:
        """Final metrics in status.json "final" (final_metrics.json is written once, with the run's end:
        `training.runs.lifecycle.close_run`)."""
        final = {str(k): _float(v) for k, v in metrics.items()}
        RunFolder(self.run_dir).write_status(final=final)

    def close(self, state: str = "finished", message: str | None = None) -> None:
        """Write what is left and close the record file; lifecycle fields are `training.runs.run`'s."""
        try:
            self.flush()
        finally:
            self.files.close()


def _each_tag(items: Mapping[str, Any], write: Callable[[str, Any], None]) -> None:
    """`write(tag, value)` for every tag; a tag refused (a link or FIFO planted on its way) never keeps the others
    from being written: the first refusal is raised after them (one line naming its path)."""
    refused: UnsafePath | None = None
    for tag, value in items.items():
        try:
            write(tag, value)
        except UnsafePath as exc:
            refused = refused or exc
    if refused is not None:
        raise refused


def _lines(items: list[dict[str, Any] | str]) -> str:
    """metrics.jsonl lines of buffered records (dicts) and column blocks (their lines), in order."""
    out, records = [], []
    for item in items:
        if isinstance(item, dict):
            records.append(item)
            continue
        out += [atomic.metric_lines(records), item]
        records = []
    out.append(atomic.metric_lines(records))
    return "".join(out)
