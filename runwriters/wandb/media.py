"""End-of-run W&B media: tables as `wandb.Table`, precision-recall curves as W&B's PR chart.

The PR chart is the one `wandb.plot.pr_curve` draws (Vega spec "wandb/area-under-curve/v0",
columns class, precision, recall; precision interpolated at 21 recall points), computed here with
NumPy from the writer interface's per-class (labels, scores), so scikit-learn is not needed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from runwriters.base import Table

INTERP_POINTS = 21  # recall grid of wandb.plot.pr_curve


def wandb_table(table: Table) -> Any:
    """A `wandb.Table`; cells holding a 2-D grid of pixel values become `wandb.Image`s."""
    import wandb

    rows = [[wandb.Image(np.asarray(c, dtype=np.uint8)) if _is_image(c) else c for c in row] for row in table.rows]
    return wandb.Table(columns=list(table.columns), data=rows)


def _is_image(cell: Any) -> bool:
    """A table cell holding a 2-D grid of pixel values (a nested list)."""
    return isinstance(cell, list) and bool(cell) and isinstance(cell[0], list)


def interpolated_precision(labels: np.ndarray, scores: np.ndarray, recall: np.ndarray) -> np.ndarray | None:
    """Best precision at recall >= r for each r (None when there are no positives: no curve).

    Thresholds are the distinct scores, highest first, as in scikit-learn's precision_recall_curve.
    """
    labels = np.asarray(labels, bool).ravel()
    scores = np.asarray(scores, np.float64).ravel()
    positives = int(labels.sum())
    if positives == 0:
        return None
    order = np.argsort(-scores, kind="stable")
    hits, ranked = labels[order], scores[order]
    last = np.r_[np.flatnonzero(np.diff(ranked)), ranked.size - 1]  # the last index of each threshold
    tp = np.cumsum(hits)[last]
    prec = np.r_[1.0, tp / (last + 1)]
    rec = np.r_[0.0, tp / positives]
    # Interpolated precision: the best precision reachable at this recall or more.
    best = np.maximum.accumulate(prec[::-1])[::-1]
    idx = np.searchsorted(rec, recall, side="left")
    return np.where(idx < rec.size, best[np.minimum(idx, rec.size - 1)], 0.0)


def pr_chart(curves: Mapping[str, tuple[np.ndarray, np.ndarray]], title: str) -> Any | None:
    """One W&B PR chart of several classes: {class name: (binary labels, scores)}; None if no class has positives."""
    import wandb

    grid = np.linspace(0, 1, INTERP_POINTS)[::-1]
    rows = []
    for name, (labels, scores) in curves.items():
        precision = interpolated_precision(labels, scores, grid)
        if precision is not None:
            rows += [[name, round(float(p), 3), round(float(r), 3)] for p, r in zip(precision, grid, strict=True)]
    if not rows:
        return None
    return wandb.plot_table(
        "wandb/area-under-curve/v0",
        wandb.Table(columns=["class", "precision", "recall"], data=rows),
        {"x": "recall", "y": "precision", "class": "class"},
        {"title": title, "x-axis-title": "Recall", "y-axis-title": "Precision"},
    )


def split_pr_tag(tag: str) -> tuple[str, str]:
    """("test/pr", "T-shirt/top") from "test/pr/T-shirt/top": a class name keeps its own "/"."""
    head, sep, name = tag.partition("/pr/")
    if sep and name:
        return head + "/pr", name
    key, _, name = tag.rpartition("/")
    return key or tag, name


def pr_charts(curves: Mapping[str, tuple[int, tuple[np.ndarray, np.ndarray]]]) -> list[tuple[int, str, Any]]:
    """{"<key>/<class>": (step, curve)} as (latest step, key, chart): one chart per key ("test/pr")."""
    groups: dict[str, dict[str, tuple[int, tuple[np.ndarray, np.ndarray]]]] = {}
    for tag, item in curves.items():
        key, name = split_pr_tag(tag)
        groups.setdefault(key or tag, {})[name] = item
    charts = []
    for key, items in groups.items():
        chart = pr_chart({name: curve for name, (_, curve) in items.items()}, f"Precision-recall ({key})")
        if chart is not None:
            charts.append((max(step for step, _ in items.values()), key, chart))
    return charts
