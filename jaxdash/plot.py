"""`wandb.plot.*` under `import jaxdash as wandb`: line, scatter, bar, histogram, line_series,
confusion_matrix, pr_curve, roc_curve.

Each returns a `CustomChart` as wandb's does: the chart's table (the same columns W&B's Vega preset
reads), W&B's custom-chart spec (its Vega preset, field and string settings: `wandb.plot.custom_chart`)
and a plotly figure of it. Logged under a key, the figure is the page's figure at that step
(artifacts/figures/<key>/) and the table goes where W&B puts it, `<key>_table` (the run store's
tables, TensorBoard's text); the W&B copy logs it as `wandb.plot_table` of the same spec, so W&B writes
its own `_wandb.visualize.<key>` chart and table (runwriters/wandb/writer.py). NumPy only: no
scikit-learn; pr_curve and roc_curve give W&B's rows all the same (W&B computes them with scikit-learn's
precision_recall_curve and roc_curve, drop_intermediate included: tests/test_wandb_curves.py). W&B's rules kept:
the classes are y_true's sorted distinct values (those in `classes_to_plot`), each scored by the column of its
position among them; a class is named by `labels[class]` for integer classes, else by its own value (a number
stays a number); rates are rounded to 3 decimals as pandas rounds.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from jaxdash.table import Table


class CustomChart:
    """What `wandb.plot.*` returns: a table, W&B's chart spec over it (`spec_name`, `fields`, `string_fields`)
    and the figure drawn from it."""

    def __init__(self, table: Table, figure: Any, spec: tuple[str, dict[str, Any], dict[str, Any]],
                 split_table: bool = False) -> None:  # fmt: skip
        self.table, self.split_table = table, split_table
        self.spec_name, self.fields, self.string_fields = spec[0], dict(spec[1]), dict(spec[2])
        self.title = str(self.string_fields.get("title") or "")
        figure.update_layout(title=self.title or None)
        self.figure = figure.to_plotly_json()


def _go() -> Any:
    import plotly.graph_objects as go

    return go


def line(
    table: Table, x: str, y: str, stroke: str | None = None, title: str = "", split_table: bool = False
) -> CustomChart:
    """A line of column `y` against `x` (one per `stroke` value)."""
    go, groups = _go(), _groups(table, stroke)
    traces = [go.Scatter(x=table_col(t, x), y=table_col(t, y), mode="lines", name=name) for name, t in groups]
    spec = ("wandb/line/v0", {"x": x, "y": y, "stroke": stroke}, {"title": title})
    return CustomChart(table, go.Figure(traces).update_layout(xaxis_title=x, yaxis_title=y), spec, split_table)


def scatter(table: Table, x: str, y: str, title: str = "", split_table: bool = False) -> CustomChart:
    """Points of column `y` against `x`."""
    go = _go()
    fig = go.Figure(go.Scatter(x=table.get_column(x), y=table.get_column(y), mode="markers"))
    spec = ("wandb/scatter/v0", {"x": x, "y": y}, {"title": title})
    return CustomChart(table, fig.update_layout(xaxis_title=x, yaxis_title=y), spec, split_table)


def bar(table: Table, label: str, value: str, title: str = "", split_table: bool = False) -> CustomChart:
    """One bar per row: `value` at `label`."""
    go = _go()
    fig = go.Figure(go.Bar(x=table.get_column(label), y=table.get_column(value)))
    spec = ("wandb/bar/v0", {"label": label, "value": value}, {"title": title})
    return CustomChart(table, fig.update_layout(xaxis_title=label, yaxis_title=value), spec, split_table)


def histogram(table: Table, value: str, title: str = "", split_table: bool = False) -> CustomChart:
    """A histogram of column `value`."""
    go = _go()
    fig = go.Figure(go.Histogram(x=table.get_column(value)))
    spec = ("wandb/histogram/v0", {"value": value}, {"title": title})
    return CustomChart(table, fig.update_layout(xaxis_title=value), spec, split_table)


def line_series(xs: Iterable[Any], ys: Iterable[Iterable[Any]], keys: Iterable[str] | None = None, title: str = "",
                xname: str = "x", split_table: bool = False) -> CustomChart:  # fmt: skip
    """Several lines on one chart; `xs` one shared sequence or one per line. Table: lineKey, lineVal, step."""
    ys = [list(np.asarray(y).tolist()) for y in ys]
    xs = list(xs)
    per_line = xs and isinstance(xs[0], (list, tuple, np.ndarray))
    xs_of = [list(np.asarray(xs[i] if per_line else xs).tolist()) for i in range(len(ys))]
    names = list(keys) if keys is not None else [f"key_{i}" for i in range(len(ys))]
    table = Table(columns=["step", "lineKey", "lineVal"])
    go = _go()
    traces = []
    for name, x, y in zip(names, xs_of, ys, strict=False):
        for a, b in zip(x, y, strict=False):
            table.add_data(a, name, b)
        traces.append(go.Scatter(x=x[: len(y)], y=y[: len(x)], mode="lines", name=name))
    fields = {"step": "step", "lineKey": "lineKey", "lineVal": "lineVal"}
    spec = ("wandb/lineseries/v0", fields, {"title": title, "xname": xname})
    return CustomChart(table, go.Figure(traces).update_layout(xaxis_title=xname), spec, split_table)


def confusion_matrix(probs: Sequence[Sequence[float]] | None = None, y_true: Sequence[Any] | None = None,
                     preds: Sequence[Any] | None = None, class_names: Sequence[str] | None = None,
                     title: str = "Confusion Matrix Curve", split_table: bool = False) -> CustomChart:  # fmt: skip
    """Counts of (actual, predicted) classes from `preds` or the argmax of `probs`. Table: Actual, Predicted, nPredictions."""
    truth = np.asarray(y_true if y_true is not None else []).ravel()
    guess = np.asarray(preds).ravel() if preds is not None else np.asarray(probs).argmax(axis=-1).ravel()
    classes = sorted(set(truth.tolist()) | set(guess.tolist()))
    if class_names is not None:
        classes = list(range(len(class_names)))
    names = list(class_names) if class_names is not None else [str(c) for c in classes]
    index = {c: i for i, c in enumerate(classes)}
    counts = np.zeros((len(classes), len(classes)), dtype=int)
    for t, p in zip(truth.tolist(), guess.tolist(), strict=False):
        if t in index and p in index:
            counts[index[t], index[p]] += 1
    table = Table(columns=["Actual", "Predicted", "nPredictions"])
    for i, a in enumerate(names):
        for j, b in enumerate(names):
            table.add_data(a, b, int(counts[i, j]))
    go = _go()
    fig = go.Figure(go.Heatmap(z=counts.tolist(), x=names, y=names, colorscale="Blues", text=counts.tolist(),
                               texttemplate="%{text}"))  # fmt: skip
    fig.update_layout(xaxis_title="Predicted", yaxis_title="Actual", yaxis_autorange="reversed")
    fields = {"Actual": "Actual", "Predicted": "Predicted", "nPredictions": "nPredictions"}
    return CustomChart(table, fig, ("wandb/confusion_matrix/v1", fields, {"title": title}), split_table)


def _plain(value: Any) -> Any:
    """A NumPy scalar as Python's (a table cell)."""
    return value.item() if isinstance(value, np.generic) else value


def _curves(y_true: Any, y_probas: Any, labels: Any, classes_to_plot: Any) -> list[tuple[Any, np.ndarray, np.ndarray]]:
    """(class name, binary labels, scores) for each class to plot, one-vs-rest, in W&B's order."""
    truth = np.asarray(y_true).ravel()
    probas = np.asarray(y_probas, dtype=np.float64)
    if probas.ndim == 1:  # one score per sample: the positive class's (W&B wants a column per class)
        probas = np.stack([1 - probas, probas], axis=1)
    classes = np.unique(truth)
    plotted = classes if classes_to_plot is None else np.asarray(classes_to_plot)
    out = []
    for i in np.flatnonzero(np.isin(classes, plotted)).tolist():
        c = classes[i]
        integer = isinstance(classes[0], np.integer)
        name = labels[int(c)] if labels is not None and integer else c
        out.append((_plain(name), truth == c, probas[:, i]))
    return out


def _ranked(hits: np.ndarray, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(true positives, false positives) at each distinct score threshold, highest first."""
    order = np.argsort(-scores, kind="stable")
    hits, ranked = hits[order], scores[order]
    last = np.r_[np.flatnonzero(np.diff(ranked)), ranked.size - 1]
    tp = np.cumsum(hits)[last]
    return tp, (last + 1) - tp


def _corners(tp: np.ndarray, fp: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The thresholds scikit-learn's roc_curve keeps (drop_intermediate): the ends, and each point where the
    curve bends (a point between two collinear ones draws nothing)."""
    if tp.size <= 2:
        return tp, fp
    keep = np.r_[True, np.logical_or(np.diff(fp, 2), np.diff(tp, 2)), True]
    return tp[keep], fp[keep]


def _add_rows(table: Table, name: Any, *columns: np.ndarray) -> None:
    for row in zip(*(np.round(c, 3).tolist() for c in columns), strict=True):
        table.add_data(name, *row)


def pr_curve(y_true: Any = None, y_probas: Any = None, labels: list[str] | None = None, classes_to_plot: Any = None,
             interp_size: int = 21, title: str = "Precision-Recall Curve", split_table: bool = False) -> CustomChart:  # fmt: skip
    """Precision against recall per class (interpolated at `interp_size` recalls). Table: class, precision, recall."""
    table, go, traces = Table(columns=["class", "precision", "recall"]), _go(), []
    grid = np.linspace(0, 1, interp_size)[::-1]  # W&B's rows: recall from 1 down to 0
    for name, hits, scores in _curves(y_true, y_probas, labels, classes_to_plot):
        if not hits.any():
            continue
        tp, fp = _ranked(hits, scores)
        prec, rec = np.r_[1.0, tp / (tp + fp)], np.r_[0.0, tp / hits.sum()]
        best = np.maximum.accumulate(prec[::-1])[::-1]
        idx = np.searchsorted(rec, grid, side="left")  # (np.searchsorted takes any order of `grid`)
        interp = np.where(idx < rec.size, best[np.minimum(idx, rec.size - 1)], 0.0)
        _add_rows(table, name, interp, grid)
        traces.append(go.Scatter(x=grid.tolist(), y=interp.tolist(), mode="lines", name=str(name)))
    fig = go.Figure(traces).update_layout(xaxis_title="Recall", yaxis_title="Precision")
    strings = {"title": title, "x-axis-title": "Recall", "y-axis-title": "Precision"}
    spec = ("wandb/area-under-curve/v0", {"x": "recall", "y": "precision", "class": "class"}, strings)
    return CustomChart(table, fig, spec, split_table)


def roc_curve(y_true: Any, y_probas: Any = None, labels: list[str] | None = None, classes_to_plot: Any = None,
              title: str = "ROC Curve", split_table: bool = False) -> CustomChart:  # fmt: skip
    """True positive rate against false positive rate per class. Table: class, fpr, tpr."""
    table, go, traces = Table(columns=["class", "fpr", "tpr"]), _go(), []
    for name, hits, scores in _curves(y_true, y_probas, labels, classes_to_plot):
        if not hits.any() or hits.all():
            continue  # one class alone: no rate (scikit-learn's are NaN)
        tp, fp = _corners(*_ranked(hits, scores))
        tpr, fpr = np.r_[0.0, tp / hits.sum()], np.r_[0.0, fp / (~hits).sum()]
        _add_rows(table, name, fpr, tpr)
        traces.append(go.Scatter(x=fpr.tolist(), y=tpr.tolist(), mode="lines", name=str(name)))
    fig = go.Figure(traces).update_layout(xaxis_title="False positive rate", yaxis_title="True positive rate")
    strings = {"title": title, "x-axis-title": "False positive rate", "y-axis-title": "True positive rate"}
    spec = ("wandb/area-under-curve/v0", {"x": "fpr", "y": "tpr", "class": "class"}, strings)
    return CustomChart(table, fig, spec, split_table)


def _groups(table: Table, stroke: str | None) -> list[tuple[str | None, Table]]:
    if stroke is None:
        return [(None, table)]
    out: dict[Any, Table] = {}
    for row in table.data:
        out.setdefault(row[table.columns.index(stroke)], Table(columns=table.columns)).add_data(*row)
    return [(str(k), t) for k, t in out.items()]


def table_col(table: Table, name: str) -> list[Any]:
    """One column's cells."""
    return table.get_column(name)


def plot_table(vega_spec_name: str, data_table: Table, fields: dict[str, Any], string_fields: dict[str, Any] | None = None,
               split_table: bool = False) -> CustomChart:  # fmt: skip
    """`wandb.plot_table`: a custom Vega chart; the page keeps its table (one notice), the W&B copy the chart."""
    from jaxdash.data_types import notice

    notice("wandb.plot_table", f"custom Vega chart {vega_spec_name!r} is kept as its table (no Vega on the page)")
    chart = CustomChart(data_table, _go().Figure(), (vega_spec_name, fields, string_fields or {}), split_table)
    chart.figure = None
    return chart
