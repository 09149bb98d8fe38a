"""Task summaries (a fitted curve, a classifier's test report) and the one place they become writer calls.

A task's `summarize` returns these plain host-side records; `write_summaries` turns each into the
general writer calls (tables for the page, images for TensorBoard and W&B), so no backend knows
about any task.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from runstore import tags
from runwriters import labels, render
from runwriters.base import MetricWriter, Table
from runwriters.render import FitSummary  # defined beside `render_fit`, which draws it; tasks import it here

MAX_POINTS = 2000  # data points kept for a fit plot; more only paints the same pixels


@dataclass
class ClassificationSummary:
    """A classifier on its test set: every label and prediction, and a sample of images.

    probs: predicted class probabilities [N, C] (for PR curves), optional.
    """

    class_names: Sequence[str]
    labels: np.ndarray
    preds: np.ndarray
    images: np.ndarray  # [M, H, W] uint8 sample, misclassified first
    image_labels: np.ndarray
    image_preds: np.ndarray
    probs: np.ndarray | None = None

    @property
    def confusion(self) -> np.ndarray:
        """[C, C] counts, rows = true class."""
        n = len(self.class_names)
        out = np.zeros((n, n), np.int64)
        np.add.at(out, (np.asarray(self.labels, int), np.asarray(self.preds, int)), 1)
        return out


@dataclass
class FigureSummary:
    """A task's own panel: a plotly figure (or its `to_plotly_json()` dict), shown on the page by step under `tag`."""

    tag: str
    figure: Any


@dataclass
class ImageSummary:
    """A task's own image: [H, W] or [H, W, 3] uint8, shown on the page and written to TensorBoard and W&B."""

    tag: str
    image: np.ndarray


def subsample(n: int, limit: int = MAX_POINTS) -> np.ndarray:
    """Evenly strided indices of at most `limit` of `n` items (deterministic)."""
    return np.linspace(0, n - 1, min(n, limit)).round().astype(np.int64)


def _write_fit(writer: MetricWriter, step: int, fit: FitSummary, first: bool, images: bool) -> None:
    if first:
        writer.write_tables(step, {tags.FIT_DATA: Table.from_columns(x=fit.x, y=fit.y)})
    curve = {"x": fit.curve_x, "y": fit.curve_y}
    if fit.truth_y is not None:
        curve["y_true"] = fit.truth_y
    writer.write_tables(step, {tags.FIT_CURVE: Table.from_columns(**curve)})
    if images:
        writer.write_images(step, {tags.FIT_IMAGE: render.render_fit(fit)})


def _write_classification(writer: MetricWriter, step: int, report: ClassificationSummary) -> None:
    names = [str(c) for c in report.class_names]
    confusion = Table(["true", *names], [[names[i], *map(int, row)] for i, row in enumerate(report.confusion)])
    images = np.asarray(report.images, np.uint8)
    sample = Table(
        ["image", "label", "pred"],
        [
            [img.tolist(), names[int(lab)], names[int(pred)]]
            for img, lab, pred in zip(images, report.image_labels, report.image_preds, strict=True)
        ],
    )
    writer.write_tables(step, {tags.CONFUSION: confusion, tags.PREDICTIONS: sample})
    writer.write_images(
        step,
        {
            tags.CONFUSION_IMAGE: labels.confusion(report.confusion, names),
            tags.PREDICTIONS_IMAGE: labels.prediction_grid(images, report.image_labels, report.image_preds, names),
        },
    )
    if report.probs is not None:
        writer.write_pr_curves(step, pr_curves(report.labels, report.probs, names))


def pr_curves(labels: np.ndarray, probs: np.ndarray, names: Sequence[str]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """One-vs-rest curves: for each class, (is this class, its predicted probability), under "test/pr/<class>"."""
    labels, probs = np.asarray(labels, np.int64), np.asarray(probs, np.float64)
    return {f"{tags.PR_CURVES}/{name}": (labels == c, probs[:, c]) for c, name in enumerate(names)}


def write_summaries(
    writer: MetricWriter, step: int, summaries: Sequence[object], first: bool, images: bool = True
) -> None:
    """Write each summary as tables and images.

    Args:
      first: the run's first snapshot (data tables are written once).
      images: also render images (TensorBoard and W&B keep every one); False for the page's live updates.
    """
    for summary in summaries:
        if isinstance(summary, FitSummary):
            _write_fit(writer, step, summary, first, images)
        elif isinstance(summary, ClassificationSummary):
            _write_classification(writer, step, summary)
        elif isinstance(summary, FigureSummary):
            fig = summary.figure.to_plotly_json() if hasattr(summary.figure, "to_plotly_json") else summary.figure
            if not isinstance(fig, dict):
                raise TypeError(
                    f"FigureSummary {summary.tag!r}: figure is a {type(fig).__name__}; give a plotly figure"
                )
            writer.write_figures(step, {summary.tag: fig})
        elif isinstance(summary, ImageSummary):
            image = np.asarray(summary.image)
            if image.ndim == 2:
                image = np.repeat(image[:, :, None], 3, axis=2)  # the writers take HWC RGB
            writer.write_images(step, {summary.tag: image.astype(np.uint8)})
        else:
            raise TypeError(
                f"unknown summary {type(summary).__name__}; use FitSummary, ClassificationSummary, "
                "FigureSummary or ImageSummary"
            )
