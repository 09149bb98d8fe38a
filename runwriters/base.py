"""The one writer interface training code logs through (after CLU's `metric_writers`).

Every method is general-purpose: scalars, images, texts, histograms, hparams and tables.
Task-specific summaries (a fitted line, a confusion matrix) are turned into these calls in one
place, `training.tasks.summaries`. Backends live next to this module, one per file, and override what
they support; a call a backend lacks is dropped (a progress bar has no images: nothing to warn
about; one debug line per method). `MultiWriter` has one explicit method per call, as CLU's:
its first writer (the run store) is required, so its failures end the run; the others are
best-effort and a failure warns once.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

log = logging.getLogger(__name__)


@dataclass
class Progress:
    """Where a run stands, handed to writers with each chunk's scalars."""

    step: int  # optimizer steps done so far (global)
    total_steps: int
    epoch: int = 0  # 1-based epoch in progress (0 for tasks without epochs)
    total_epochs: int = 0
    wall_seconds: float = 0.0  # since the run started, compile included
    compile_seconds: float | None = None  # time spent compiling chunks
    steps_per_sec: float | None = None  # steady-state rate over the last chunk
    phase: str = "training"  # "loading data", "compiling", "training", "evaluating"


@dataclass
class Table:
    """Rows under named columns; a cell is a number, a string or a (small) nested list such as an image."""

    columns: list[str]
    rows: list[list[Any]] = field(default_factory=list)

    @classmethod
    def from_columns(cls, **columns: Sequence[Any] | np.ndarray) -> Table:
        """A table from equally long columns, e.g. `Table.from_columns(x=xs, y=ys)`."""
        names = list(columns)
        values = [np.asarray(v).tolist() for v in columns.values()]
        return cls(names, [list(row) for row in zip(*values, strict=True)])

    def column(self, name: str) -> list[Any]:
        """The values of one column."""
        i = self.columns.index(name)
        return [row[i] for row in self.rows]


@dataclass
class Images:
    """Several images logged under one tag at one step (W&B's list of `wandb.Image`), with their captions."""

    pixels: list[np.ndarray]  # HWC uint8 each
    captions: list[str | None] = field(default_factory=list)
    listed: bool = True  # logged as a list (False: one image, kept here for its caption)


@dataclass
class Chart:
    """A W&B custom chart (`wandb.plot.*`, `wandb.plot_table`): W&B's Vega preset with its field and string
    settings over a table, and a plotly figure of it for writers that draw no Vega (None: none)."""

    spec_name: str
    fields: dict[str, Any]
    string_fields: dict[str, Any]
    table: Table
    figure: dict[str, Any] | None = None
    split_table: bool = False


@dataclass
class Bins:
    """A histogram already binned (`wandb.Histogram(np_histogram=(counts, edges))`): len(edges) == len(counts) + 1."""

    counts: np.ndarray
    edges: np.ndarray


class MetricWriter:
    """Base writer. A backend overrides the calls it supports; any other call is dropped (one debug line)."""

    def _lacks(self, method: str) -> None:
        warned = self.__dict__.setdefault("_lacking_warned", set())
        if method not in warned:
            warned.add(method)
            log.debug("%s does not support %s; those calls are skipped.", type(self).__name__, method)

    def write_hparams(self, hparams: Mapping[str, Any]) -> None:
        """The run's config (and any other settings), once at start."""
        self._lacks("write_hparams")

    def write_scalars(self, step: int, scalars: Mapping[str, float], progress: Progress | None = None) -> None:
        """Scalars of one step, e.g. {"train/loss": 0.3}; tags carry a `group/` prefix."""
        self._lacks("write_scalars")

    def write_scalar_rows(
        self, steps: np.ndarray, columns: Mapping[str, np.ndarray], progress: Progress | None = None
    ) -> None:
        """Scalars of many steps at once: `columns[tag][i]` belongs to `steps[i]`; `progress` to the last.

        By default one `write_scalars` per step; a backend that can take whole columns overrides it
        (the run store formats a block of JSON lines in one go, the writer process gets one message).
        A backend without `write_scalars` drops the block at once.
        """
        if type(self).write_scalars is MetricWriter.write_scalars:
            self._lacks("write_scalars")
            return
        names, values = list(columns), [np.asarray(c).tolist() for c in columns.values()]
        last = len(steps) - 1
        for i, (step, *row) in enumerate(zip(np.asarray(steps).tolist(), *values, strict=True)):
            self.write_scalars(int(step), dict(zip(names, row, strict=True)), progress if i == last else None)

    def write_images(self, step: int, images: Mapping[str, np.ndarray]) -> None:
        """HWC uint8 RGB images keyed by tag; a value may be an `Images` (several, with captions)."""
        self._lacks("write_images")

    def write_histograms(self, step: int, arrays: Mapping[str, np.ndarray]) -> None:
        """Arrays (e.g. layer weights) to summarise as histograms; a value may be `Bins` (already binned)."""
        self._lacks("write_histograms")

    def write_texts(self, step: int, texts: Mapping[str, str]) -> None:
        """Markdown text keyed by tag."""
        self._lacks("write_texts")

    def write_values(self, step: int, values: Mapping[str, Any]) -> None:
        """JSON values W&B's history keeps as they are, keyed by tag: small arrays as (nested) lists."""
        self._lacks("write_values")

    def write_pr_curves(self, step: int, curves: Mapping[str, tuple[np.ndarray, np.ndarray]]) -> None:
        """Precision-recall curves keyed by tag, each from (binary labels [N], scores in [0, 1] [N])."""
        self._lacks("write_pr_curves")

    def write_tables(self, step: int, tables: Mapping[str, Table]) -> None:
        """Tables keyed by tag; a later table of the same tag supersedes the earlier one."""
        self._lacks("write_tables")

    def write_figures(self, step: int, figures: Mapping[str, dict[str, Any]]) -> None:
        """Plotly figures (as `fig.to_plotly_json()` dicts) keyed by tag; the page shows them by step."""
        self._lacks("write_figures")

    def write_charts(self, step: int, charts: Mapping[str, Chart]) -> None:
        """W&B custom charts keyed by tag. By default each chart's table under "<tag>_table" (where W&B keeps it)
        and its figure under the tag; a backend that draws W&B's charts (W&B) overrides it."""
        self.write_tables(step, {f"{tag}_table": chart.table for tag, chart in charts.items()})
        figures = {tag: chart.figure for tag, chart in charts.items() if chart.figure is not None}
        if figures:
            self.write_figures(step, figures)

    def write_summary(self, metrics: Mapping[str, float]) -> None:
        """Final metrics, once at the end (before close)."""

    def flush(self) -> None:
        """Make everything written so far durable (called once per chunk)."""

    def close(self, state: str = "finished", message: str | None = None) -> None:
        """End of run; `state` is finished | failed | diverged | stopped."""


class MultiWriter(MetricWriter):
    """Writes every call to each of its writers, as CLU's `MultiWriter`: one explicit method per call.

    The first writer (the run store) is required: its failure propagates and ends the run. The
    others are best-effort: a failure warns once per writer and method, and training goes on.

    Args:
      writers: the required writer first, then the optional ones.
    """

    def __init__(self, writers: Sequence[MetricWriter]):
        self.writers = list(writers)
        self._warned: set[tuple[int, str]] = set()

    def write_hparams(self, hparams: Mapping[str, Any]) -> None:  # noqa: D102 - as MetricWriter's
        self._each("write_hparams", hparams)

    def write_scalars(self, step: int, scalars: Mapping[str, float], progress: Progress | None = None) -> None:  # noqa: D102
        self._each("write_scalars", step, scalars, progress)

    def write_scalar_rows(  # noqa: D102
        self, steps: np.ndarray, columns: Mapping[str, np.ndarray], progress: Progress | None = None
    ) -> None:
        self._each("write_scalar_rows", steps, columns, progress)

    def write_images(self, step: int, images: Mapping[str, np.ndarray]) -> None:  # noqa: D102
        self._each("write_images", step, images)

    def write_histograms(self, step: int, arrays: Mapping[str, np.ndarray]) -> None:  # noqa: D102
        self._each("write_histograms", step, arrays)

    def write_texts(self, step: int, texts: Mapping[str, str]) -> None:  # noqa: D102
        self._each("write_texts", step, texts)

    def write_values(self, step: int, values: Mapping[str, Any]) -> None:  # noqa: D102
        self._each("write_values", step, values)

    def write_pr_curves(self, step: int, curves: Mapping[str, tuple[np.ndarray, np.ndarray]]) -> None:  # noqa: D102
        self._each("write_pr_curves", step, curves)

    def write_tables(self, step: int, tables: Mapping[str, Table]) -> None:  # noqa: D102
        self._each("write_tables", step, tables)

    def write_figures(self, step: int, figures: Mapping[str, dict[str, Any]]) -> None:  # noqa: D102
        self._each("write_figures", step, figures)

    def write_charts(self, step: int, charts: Mapping[str, Chart]) -> None:  # noqa: D102
        self._each("write_charts", step, charts)

    def write_summary(self, metrics: Mapping[str, float]) -> None:  # noqa: D102
        self._each("write_summary", metrics)

    def flush(self) -> None:  # noqa: D102
        self._each("flush")

    def close(self, state: str = "finished", message: str | None = None) -> None:
        """Close every writer, the optional ones even when the required one fails."""
        try:
            self._each_optional("close", state, message)
        finally:
            if self.writers:
                self.writers[0].close(state, message)

    def _each(self, method: str, *args: Any) -> None:
        if self.writers:
            getattr(self.writers[0], method)(*args)  # the run store: a failure ends the run (training.runs.run)
        self._each_optional(method, *args)

    def _each_optional(self, method: str, *args: Any) -> None:
        for i, w in enumerate(self.writers[1:], start=1):
            try:
                getattr(w, method)(*args)
            except Exception as exc:  # noqa: BLE001 - optional tracking must never stop training
                if (i, method) not in self._warned:
                    self._warned.add((i, method))
                    log.warning(
                        "%s.%s failed (%s: %s); continuing without it.",
                        type(w).__name__,
                        method,
                        type(exc).__name__,
                        exc,
                    )


class MemoryWriter(MetricWriter):
    """Keeps every call in lists; for tests and for callers that want the history back."""

    def __init__(self) -> None:
        self.hparams: dict[str, Any] = {}
        self.scalars: list[tuple[int, dict[str, float]]] = []
        self.progress: list[Progress] = []
        self.images: list[tuple[int, dict[str, np.ndarray]]] = []
        self.histograms: list[tuple[int, dict[str, np.ndarray]]] = []
        self.texts: list[tuple[int, dict[str, str]]] = []
        self.tables: list[tuple[int, dict[str, Table]]] = []
        self.pr_curves: list[tuple[int, dict[str, tuple[np.ndarray, np.ndarray]]]] = []
        self.summary: dict[str, float] = {}
        self.closed: tuple[str, str | None] | None = None

    def write_hparams(self, hparams):  # noqa: D102
        self.hparams = dict(hparams)

    def write_scalars(self, step, scalars, progress=None):  # noqa: D102
        self.scalars.append((step, dict(scalars)))
        if progress is not None:
            self.progress.append(progress)

    def write_images(self, step, images):  # noqa: D102
        self.images.append((step, dict(images)))

    def write_histograms(self, step, arrays):  # noqa: D102
        self.histograms.append((step, dict(arrays)))

    def write_texts(self, step, texts):  # noqa: D102
        self.texts.append((step, dict(texts)))

    def write_tables(self, step, tables):  # noqa: D102
        self.tables.append((step, dict(tables)))

    def write_pr_curves(self, step, curves):  # noqa: D102
        self.pr_curves.append((step, dict(curves)))

    def write_summary(self, metrics):  # noqa: D102
        self.summary = dict(metrics)

    def close(self, state="finished", message=None):  # noqa: D102
        self.closed = (state, message)

    def series(self, name: str) -> list[tuple[int, float]]:
        """(step, value) pairs of one scalar."""
        return [(s, d[name]) for s, d in self.scalars if name in d]

    def latest_table(self, tag: str) -> Table | None:
        """The last table written under `tag`."""
        found = [t[tag] for _, t in self.tables if tag in t]
        return found[-1] if found else None


class NullWriter(MetricWriter):
    """Drops every call silently (benchmarks: the loop without any logging)."""

    def _lacks(self, method: str) -> None:
        pass


@dataclasses.dataclass(frozen=True)
class Tracking:
    """Where a run logs besides the run store: one object from the CLI, the page or the client to the writers.

    wandb_mode: "online", "offline" or "disabled"; "auto": $WANDB_MODE, else online when wandb finds
      credentials for its configured host, else offline.
    tensorboard: write event files under run_dir/tb. console: a tqdm progress bar on stderr.
    group: W&B group (a population's id). job_type: W&B job type (the task's name).
    run_store: False in a process that writes only TensorBoard and W&B (the client's writer process).
    member: a population member's index (its own W&B run id under `$WANDB_RUN_ID`).
    """

    wandb_mode: str = "auto"
    tensorboard: bool = True
    console: bool = True
    group: str | None = None
    job_type: str | None = None
    run_store: bool = True
    member: int | None = None


DEFAULT_TRACKING = Tracking()  # frozen: safe as a default argument
