"""The one writer interface training code logs through (after CLU's `metric_writers`).

Training code receives a `MetricWriter` and never imports a tracking backend.
Backends live next to this module, one per file; `MultiWriter` fans out.
A backend that lacks a feature keeps the default no-op; a backend that fails
warns once and carries on, so tracking can never stop training.
"""

from __future__ import annotations

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
    compile_seconds: float | None = None  # time of the first (compiling) chunk beyond a steady one
    steps_per_sec: float | None = None  # steady-state rate over the last chunk


@dataclass
class ClassificationReport:
    """End-of-run (or periodic) evaluation of a classifier on the test set."""

    class_names: Sequence[str]
    confusion: np.ndarray  # [C, C] int, rows = true label, cols = predicted
    images: np.ndarray  # [N, 28, 28] uint8 sample of test images
    labels: np.ndarray  # [N] int true labels for `images`
    preds: np.ndarray  # [N] int predicted labels for `images`
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class RegressionSnapshot:
    """Data sample plus current fit, for fitted-line images."""

    x: np.ndarray  # [N] sample of inputs (at most a few thousand)
    y: np.ndarray  # [N]
    weight: float
    bias: float
    true_weight: float
    true_bias: float


class MetricWriter:
    """Base writer; every method is a no-op so a backend overrides what it supports."""

    def write_hparams(self, hparams: Mapping[str, Any]) -> None:
        """Config of the run, once at start."""

    def write_scalars(self, step: int, scalars: Mapping[str, float], progress: Progress | None = None) -> None:
        """Scalars for one step, e.g. {"train/loss": 0.3}; names carry a `group/` prefix."""

    def write_images(self, step: int, images: Mapping[str, np.ndarray]) -> None:
        """HWC uint8 images keyed by tag."""

    def write_histograms(self, step: int, arrays: Mapping[str, np.ndarray]) -> None:
        """Arrays (e.g. layer weights) to summarise as histograms."""

    def write_texts(self, step: int, texts: Mapping[str, str]) -> None:
        """Markdown/plain text keyed by tag."""

    def write_regression(self, step: int, snap: RegressionSnapshot) -> None:
        """Current regression fit over a data sample."""

    def write_classification(self, step: int, report: ClassificationReport) -> None:
        """Confusion matrix and sample predictions."""

    def write_summary(self, metrics: Mapping[str, float]) -> None:
        """Final metrics, once at the end (before close)."""

    def flush(self) -> None:
        """Make everything written so far durable (called once per chunk)."""

    def close(self, state: str = "finished", message: str | None = None) -> None:
        """End of run; `state` is finished | failed | diverged | stopped."""


class MultiWriter(MetricWriter):
    """Fans every call out to several writers; one failing backend never stops the others."""

    def __init__(self, writers: Sequence[MetricWriter]):
        self.writers = list(writers)
        self._warned: set[tuple[int, str]] = set()

    def _each(self, method: str, *args: Any, **kwargs: Any) -> None:
        for i, w in enumerate(self.writers):
            try:
                getattr(w, method)(*args, **kwargs)
            except Exception as exc:  # noqa: BLE001 - tracking must never stop training
                if (i, method) not in self._warned:
                    self._warned.add((i, method))
                    log.warning("%s.%s failed (%s: %s); continuing without it.", type(w).__name__, method, type(exc).__name__, exc)

    def write_hparams(self, hparams):  # noqa: D102
        self._each("write_hparams", hparams)

    def write_scalars(self, step, scalars, progress=None):  # noqa: D102
        self._each("write_scalars", step, scalars, progress)

    def write_images(self, step, images):  # noqa: D102
        self._each("write_images", step, images)

    def write_histograms(self, step, arrays):  # noqa: D102
        self._each("write_histograms", step, arrays)

    def write_texts(self, step, texts):  # noqa: D102
        self._each("write_texts", step, texts)

    def write_regression(self, step, snap):  # noqa: D102
        self._each("write_regression", step, snap)

    def write_classification(self, step, report):  # noqa: D102
        self._each("write_classification", step, report)

    def write_summary(self, metrics):  # noqa: D102
        self._each("write_summary", metrics)

    def flush(self):  # noqa: D102
        self._each("flush")

    def close(self, state="finished", message=None):  # noqa: D102
        self._each("close", state, message)


class MemoryWriter(MetricWriter):
    """Keeps everything in lists; for tests and for callers that want the history back."""

    def __init__(self) -> None:
        self.hparams: dict[str, Any] = {}
        self.scalars: list[tuple[int, dict[str, float]]] = []
        self.progress: list[Progress] = []
        self.regression: list[tuple[int, RegressionSnapshot]] = []
        self.classification: list[tuple[int, ClassificationReport]] = []
        self.images: list[tuple[int, dict[str, np.ndarray]]] = []
        self.histograms: list[tuple[int, dict[str, np.ndarray]]] = []
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

    def write_regression(self, step, snap):  # noqa: D102
        self.regression.append((step, snap))

    def write_classification(self, step, report):  # noqa: D102
        self.classification.append((step, report))

    def write_summary(self, metrics):  # noqa: D102
        self.summary = dict(metrics)

    def close(self, state="finished", message=None):  # noqa: D102
        self.closed = (state, message)

    def series(self, name: str) -> list[tuple[int, float]]:
        """(step, value) pairs of one scalar."""
        return [(s, d[name]) for s, d in self.scalars if name in d]
