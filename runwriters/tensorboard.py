"""TensorBoard backend (tensorboardX): scalars, images, histograms, PR curves, texts, HParams.

What a TensorBoard user sees with `tensorboard --logdir runs`:

* Each run under a readable name: events go to `<run_dir>/tb/<name>` (a population member's name
  is its varied settings, e.g. `lr=0.003,seed=1`), so the run list reads `<run id>/tb/<name>`.
* Scalars written once: the engine's `epoch/*` means repeat `train/*` at epoch granularity and are
  left to the run store and W&B. The final metrics (what the CLI prints, `final_metrics.json`, W&B's
  `summary.final`) are `final/<tag>` points at the last step, so HParams shows those same numbers.
* One TensorBoard run per run, every scalar in it: `train/*`, `test/*`, `perf/steps_per_sec` and a
  task's own (`regression/*`, `pbt/lr`). The engine's `sys/*` (CPU, memory) is left to the page and
  W&B, as TensorBoard has no system panel. TensorBoard's HParams plugin takes every scalar tag of a session's
  run (and of the runs below it) as a metric column, and the only way to choose columns, an
  experiment summary, is one per logdir (it would hide other tasks' settings). So the columns are
  the run's curves, their final numbers and its speed: a short list, the same for every run of a task.
  (A sibling `<name> (extra)` run for the other scalars kept them out of HParams, but doubled the
  run list.)
* A Custom Scalars layout with train and test loss on one chart and train and test accuracy on
  another (the same charts in every run, so TensorBoard merges them).
* HParams as a session-start/-end pair in the run's own event file and no experiment summary
  (TensorBoard would pick one run's arbitrarily and hide other tasks' settings). TensorBoard then
  builds the table from every run's session: the config with its types (ints stay whole numbers),
  settings that differ across runs first, and each run's last value of every scalar tag as metrics.
* Events are written in the caller's thread and flushed once per chunk (`tb_files`).
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
from tensorboardX.proto import api_pb2, plugin_hparams_pb2
from tensorboardX.proto.summary_pb2 import Summary, SummaryMetadata
from tensorboardX.summary import _clean_tag, custom_scalars
from tensorboardX.summary import hparams as hparams_summary

from runstore import config_keys, nofollow, tags
from runwriters.base import Bins, Images, MetricWriter, Progress, Table
from runwriters.tb_files import SyncSummaryWriter, image_summary, scalar_records

log = logging.getLogger(__name__)

_END_STATUS = {
    "finished": "STATUS_SUCCESS",
    "stopped": "STATUS_SUCCESS",
    "pruned": "STATUS_SUCCESS",  # ended on purpose by a sweep's pruner, as Optuna's TensorBoard callback counts it
    "failed": "STATUS_FAILURE",
    "diverged": "STATUS_FAILURE",
}
_SKIPPED_GROUPS = (tags.EPOCH + "/",)  # epoch means: the same curve as train/* at coarser steps
_SKIPPED_TAGS = frozenset(tags.SYSTEM)  # the engine's system metrics: the page's and W&B's
# Custom Scalars charts: title -> the exact tags drawn together, in legend order.
CHARTS = {
    "loss": (tags.TRAIN_LOSS, tags.TEST_LOSS),
    "accuracy": (tags.TRAIN_ACC, tags.TEST_ACC),
}
CATEGORY = "train vs test"


def readable_name(name: str | None, fallback: str) -> str:
    """A TensorBoard run name from a display name: a member's varied values, else the name itself.

    "sweep #1 (lr=0.003 seed=1)" -> "lr=0.003,seed=1"; "/" and odd characters become "_".
    """
    name = (name or "").strip()
    member = re.search(r"#\d+ \((.+)\)$", name)
    if member:
        name = ",".join(member.group(1).split())
    name = re.sub(r"[^A-Za-z0-9_.,=+@ -]+", "_", name).strip(" .")[:100]
    return name or fallback


def event_dir(tb_root: Path, name: str | None) -> Path:
    """Where a run's events go: `tb_root/<readable name>`, or `tb_root` itself for an older run that wrote there."""
    tb_root = Path(tb_root)
    if any(tb_root.glob("events.out.tfevents.*")):
        return tb_root  # resuming a run written before names: one TensorBoard run, not two
    return tb_root / readable_name(name, "run")


def flatten_hparams(config: Mapping[str, Any], prefix: str = "") -> dict[str, bool | str | int | float]:
    """Config as HParams values: nested dicts dotted keys (runstore.config_keys, as the pages show them), lists
    "a,b" strings, None left out.

    None is dropped rather than stringified so a field keeps one type across runs
    (TensorBoard's HParams table cannot mix a number column with "none").
    """
    out: dict[str, bool | str | int | float] = {}
    for key, v in config_keys.flatten(config, prefix).items():
        if isinstance(v, (list, tuple)):
            out[key] = ",".join(map(str, v))
        elif v is None or isinstance(v, Mapping):
            continue  # an empty nested dict: nothing to show
        elif isinstance(v, (bool, str)):
            out[key] = v
        elif isinstance(v, (int, np.integer)):
            out[key] = int(v)  # the config's own type: the config text shows 32, not 32.0
        elif isinstance(v, (float, np.floating)):
            out[key] = float(v)
        else:
            out[key] = str(v)
    return out


def session_start(hparams: Mapping[str, Any], trial_name: str) -> Summary:
    """The HParams session start, its trial named `trial_name` (TensorBoard shows the run path otherwise)."""
    _, ssi, _ = hparams_summary(hparams, {})
    value = ssi.value[0]
    data = plugin_hparams_pb2.HParamsPluginData.FromString(value.metadata.plugin_data.content)
    data.session_start_info.group_name = trial_name
    value.metadata.plugin_data.content = data.SerializeToString()
    return ssi


def _cell(value: Any) -> str:
    """A table cell as text: floats to 6 significant digits (no float32 noise like 0.0002300000051036477)."""
    return format(value, ".6g") if isinstance(value, (float, np.floating)) else str(value)


def _markdown_table(hp: Mapping[str, Any]) -> str:
    rows = "\n".join(f"| {k} | {_cell(v)} |" for k, v in hp.items())
    return "| setting | value |\n| --- | --- |\n" + rows


class TensorBoardWriter(MetricWriter):
    """Writes one run's event file under `<tb_root>/<readable name>` (`logdir`).

    Args:
      tb_root: the run's TensorBoard folder (normally `<run_dir>/tb`).
      run_name: the run's display name (its TensorBoard run name, see `readable_name`).
      resume_step: continue this logdir after a checkpoint at this step (TensorBoard drops later events).
    """

    def __init__(self, tb_root: str | Path, run_name: str | None = None, resume_step: int | None = None):
        self.logdir = event_dir(Path(tb_root), run_name)
        self.run_name = run_name
        # The HParams trial: the readable name first (a run id alone reads "20261123-2221..." in every row).
        self.trial_name = f"{readable_name(run_name, 'run')} ({Path(tb_root).parent.name})"
        self._hparams: dict[str, Any] | None = None  # the settings written so far
        # Resuming from a checkpoint at step S: events a killed process wrote after S are purged.
        self._purge = None if resume_step is None else int(resume_step) + 1
        # The event folder made (or entered) without following a link planted in the run folder: UnsafePath else.
        Path(tb_root).parent.mkdir(parents=True, exist_ok=True)  # the run folder: the anchor of the walk
        nofollow.make_folder(Path(tb_root).parent, self.logdir)
        self.sw = SyncSummaryWriter(logdir=str(self.logdir), purge_step=self._purge)
        self._tables: dict[str, tuple[int, Table]] = {}
        self._step = int(resume_step or 0)
        self._charts: tuple[str, ...] = ()
        self._seen: set[str] = set()
        self._closed = False

    def write_hparams(self, hparams: Mapping[str, Any]) -> None:
        """Session start (so even a crashed run has its HParams row) and a config text table.

        The HParams row is the run's settings at its start; a later call (PBT moved the lr) writes
        the config text again at the current step, with the values changed.
        """
        flat = flatten_hparams(hparams)
        if self._hparams is None:
            self._hparams = flat
            self.sw.file_writer.add_summary(session_start(flat, self.trial_name))
        else:
            self._hparams = {**self._hparams, **flat}
        title = f"**{self.run_name}**\n\n" if self.run_name else ""
        self.sw.add_text("config", title + _markdown_table(self._hparams), self._step)

    def write_scalars(self, step: int, scalars: Mapping[str, float], progress: Progress | None = None) -> None:
        """One scalar event per tag (NaN/inf kept: TensorBoard shows them); epoch means and system metrics are skipped."""
        self._step = max(self._step, int(step))
        for tag, value in scalars.items():
            if tag in _SKIPPED_TAGS or tag.startswith(_SKIPPED_GROUPS):
                continue
            self._seen.add(tag)
            self.sw.add_scalar(tag, float(np.asarray(value)), int(step))

    def write_scalar_rows(self, steps: np.ndarray, columns: Mapping[str, np.ndarray],
                          progress: Progress | None = None) -> None:  # fmt: skip
        """A block of steps: the events `write_scalars` writes for each row (tensorboardX's `add_scalar` event: one
        a tag and step, its tag cleaned as tensorboardX cleans it), built as bytes from the columns
        (`tb_files.scalar_records`), with one wall time for the block."""
        kept = [tag for tag in columns if tag not in _SKIPPED_TAGS and not tag.startswith(_SKIPPED_GROUPS)]
        steps = np.asarray(steps).astype(np.int64).tolist()
        if not steps:
            return
        self._step = max(self._step, steps[-1])
        self._seen.update(kept)
        records = scalar_records(steps, [(_clean_tag(tag), columns[tag]) for tag in kept], time.time())
        self.sw._get_file_writer().event_writer.write_records(records)

    def _write_layout(self) -> None:
        """Custom Scalars: train and test of a metric on one chart, once the run has logged either."""
        charts = tuple(t for t, pair in CHARTS.items() if self._seen.intersection(pair))
        if charts and charts != self._charts:  # TensorBoard reads the latest layout of each run
            self._charts = charts
            layout = {CATEGORY: {t: ["Multiline", [f"^{re.escape(tag)}$" for tag in CHARTS[t]]] for t in charts}}
            self.sw.file_writer.add_summary(custom_scalars(layout))

    def write_images(self, step: int, images: Mapping[str, np.ndarray]) -> None:
        """HWC uint8 images; an `Images` of several as <tag>/<i> (TensorBoard shows one image per tag and step)."""
        for tag, img in images.items():
            many = img.pixels if isinstance(img, Images) else [img]
            for i, pixels in enumerate(many):
                name = tag if len(many) == 1 else f"{tag}/{i}"
                self.sw.file_writer.add_summary(image_summary(name, np.asarray(pixels, dtype=np.uint8)), int(step))

    def write_histograms(self, step: int, arrays: Mapping[str, np.ndarray]) -> None:
        """Histograms of arrays (e.g. layer weights)."""
        for tag, arr in arrays.items():
            if isinstance(arr, Bins):  # already binned: as TensorBoard's own histogram of those bins
                self._add_bins(tag, arr, int(step))
            else:
                self.sw.add_histogram(tag, np.asarray(arr, dtype=np.float64).ravel(), int(step))

    def _add_bins(self, tag: str, hist: Bins, step: int) -> None:
        counts, edges = np.asarray(hist.counts, np.float64), np.asarray(hist.edges, np.float64)
        mids, total = (edges[:-1] + edges[1:]) / 2, float(counts.sum())
        self.sw.add_histogram_raw(tag, float(edges[0]), float(edges[-1]), total, float((mids * counts).sum()),
                                  float((mids**2 * counts).sum()), edges[1:].tolist(), counts.tolist(), step)  # fmt: skip

    def write_pr_curves(self, step: int, curves: Mapping[str, tuple[np.ndarray, np.ndarray]]) -> None:
        """Precision-recall curves from binary labels and scores in [0, 1] (the PR Curves tab)."""
        for tag, (labels, scores) in curves.items():
            self.sw.add_pr_curve(tag, np.asarray(labels, bool), np.asarray(scores, np.float64), int(step))

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
                body = "\n".join("| " + " | ".join(map(_cell, row)) + " |" for row in table.rows)
                self.sw.add_text(tag, f"{head}\n{body}", int(step))

    def write_summary(self, metrics: Mapping[str, float]) -> None:
        """Final metrics as `final/<tag>` at the last step: HParams columns holding exactly the numbers of
        `final_metrics.json`, the CLI and W&B's `summary.final` (a `train/*` column is the last chunk's mean)."""
        for tag, value in metrics.items():
            final_tag = tag if tag.startswith("final/") else f"final/{tag}"
            self.sw.add_scalar(final_tag, float(np.asarray(value)), self._step)

    def flush(self) -> None:
        """Push the chunk's events to the file (and the Custom Scalars layout once its tags exist)."""
        self._write_layout()
        self.sw.file_writer.flush()

    def close(self, state: str = "finished", message: str | None = None) -> None:
        """Tables as text, the run's message, session end with its status, then close the file."""
        if self._closed:
            return
        self._write_tables()
        self._write_layout()
        if message:
            self.sw.add_text("run/message", f"{state}: {message}", self._step)
        sei = plugin_hparams_pb2.SessionEndInfo(status=api_pb2.Status.Value(_END_STATUS.get(state, "STATUS_UNKNOWN")))
        content = plugin_hparams_pb2.HParamsPluginData(session_end_info=sei, version=0).SerializeToString()
        meta = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name="hparams", content=content))
        self.sw.file_writer.add_summary(Summary(value=[Summary.Value(tag="_hparams_/session_end_info", metadata=meta)]))
        self.sw.close()
        self._closed = True
