"""Plotly figure builders for the dashboard: plain data in, `go.Figure` out.

No JAX and no Streamlit here, so every figure can be built and checked in a unit test.
All figures share one look (`_style`): plotly_white, fixed height, horizontal legend on
top, and a constant `uirevision` so a live refresh keeps the user's zoom and legend clicks.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import plotly.graph_objects as go
from plotly.colors import qualitative

from components.chart_look import PLAIN, CurveLook, Frame
from components.figure_style import TEMPLATE, _empty, _style  # noqa: F401 - TEMPLATE is part of this API
from components.series import Series, downsample_minmax, ema_smooth
from components.series import progress_text as progress_text  # re-export: lives in series.py, needs no plotly

COLORS = qualitative.Plotly
WRONG_COLOR = "#d62728"
TRUE_LINE_COLOR = "#7f7f7f"
MAX_LEGEND_FITS = 10  # beyond this a population's curves share one legend entry
SPARSE_POINTS = 50  # a curve of at most this many points shows its points as markers too
Curve = tuple[np.ndarray, np.ndarray]
ACCURACY = Frame("Accuracy")  # accuracy_figure's frame unless given one
FIT = Frame("Fit", height=420, uirevision="fit")  # fit_figure's


def _finite_or_nan(y: np.ndarray) -> np.ndarray:
    """inf becomes NaN so plotly draws a gap instead of an unplottable value."""
    return np.where(np.isfinite(y), y, np.nan).astype(float)


def _pad_range(lo: float, hi: float, frac: float) -> list[float]:
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return [-1.0, 1.0]
    span = hi - lo if hi > lo else max(abs(hi), 1.0)
    return [lo - frac * span, hi + frac * span]


def _line(x: np.ndarray, y: np.ndarray, name: str, color: str, width: float, **kw: Any) -> go.Scatter:
    kw.setdefault("mode", "lines")
    return go.Scatter(x=x, y=_finite_or_nan(y), name=name, line=dict(color=color, width=width), **kw)


def _stride_indices(n: int, max_points: int) -> np.ndarray:
    """Evenly spaced indices: a deterministic thinning of scatter data (no RNG)."""
    if n <= max_points:
        return np.arange(n)
    return np.unique(np.linspace(0, n - 1, max_points).round().astype(np.int64))


def _xy(pair: tuple[Any, Any]) -> tuple[np.ndarray, np.ndarray]:
    """(x, y) as flat float arrays of equal length, sorted by x (a curve is drawn left to right)."""
    x, y = (np.asarray(v, dtype=float).ravel() for v in pair)
    if x.shape != y.shape:
        raise ValueError(f"x has {x.size} values, y has {y.size}")
    order = np.argsort(x, kind="stable")
    return x[order], y[order]


def _fit_ranges(x: np.ndarray, y: np.ndarray, truth: Curve | None) -> tuple[list[float], list[float]]:
    """Axis ranges from the data and the true curve only, so a model's curve slides over fixed axes."""
    xs, ys = [x], [y]
    if truth is not None:
        xs.append(truth[0])
        ys.append(truth[1])
    ax, ay = np.concatenate(xs), np.concatenate(ys)
    okx, oky = ax[np.isfinite(ax)], ay[np.isfinite(ay)]
    xr = _pad_range(float(okx.min()), float(okx.max()), 0.03) if okx.size else [-1.0, 1.0]
    yr = _pad_range(float(oky.min()), float(oky.max()), 0.08) if oky.size else [-1.0, 1.0]
    return xr, yr


def fit_figure(
    data: tuple[Any, Any] | None,
    curves: Mapping[str, tuple[Any, Any]],
    truth: tuple[Any, Any] | None = None,
    frame: Frame = FIT,
    look: CurveLook = PLAIN,
) -> go.Figure:
    """A model's curve over its data: data scatter, the true curve (dashed gray) and one curve per model.

    Works for any 1-D fit, a line (two points) or a curve such as a sine (many points). Axis ranges
    are fixed from the data and the true curve, so between refreshes a model's curve visibly slides
    onto the data instead of the axes rescaling around it.

    Args:
      data: (x, y) of the data points, or None while they are not written yet.
      curves: name -> (x, y) of each model's curve (K members of a population: K curves).
      truth: (x, y) of the true function, when known.
      frame: its title, height, uirevision and the text shown without data (its axes are x and y).
      look: `max_points` data points shown at most, `colors` of the model curves (the rest is not used).
    """
    if data is None:
        return _empty(_style(go.Figure(), frame.title, frame.height, frame.uirevision), frame.empty_text)
    x, y = (np.asarray(v, dtype=float).ravel() for v in data)
    keep = _stride_indices(x.size, look.max_points)
    shown = f"data ({keep.size:,} of {x.size:,})" if keep.size < x.size else "data"
    marker = dict(size=4, color="#4c78a8", opacity=0.45)
    traces = [go.Scatter(x=x[keep], y=y[keep], mode="markers", name=shown, marker=marker)]
    true_curve = _xy(truth) if truth is not None else None
    if true_curve is not None:
        traces.append(_line(*true_curve, "true", TRUE_LINE_COLOR, 2, line_dash="dash"))
    many = len(curves) > MAX_LEGEND_FITS
    for i, (name, pair) in enumerate(curves.items()):
        color = (look.colors or {}).get(name, COLORS[i % len(COLORS)])
        label = name if not many else f"population ({len(curves)})"
        line = _line(*_xy(pair), label, color, 1.5 if many else 3, hovertext=name, hoverinfo="text+x+y")
        if many:
            line.update(legendgroup="fits", showlegend=i == 0)
        traces.append(line)
    xr, yr = _fit_ranges(x, y, true_curve)
    axes = dict(xaxis=dict(range=xr, title=dict(text="x")), yaxis=dict(range=yr, title=dict(text="y")))
    return _style(go.Figure(data=traces), frame.title, frame.height, frame.uirevision, **axes)


def curves_figure(series: Mapping[str, Series], frame: Frame, look: CurveLook = PLAIN) -> go.Figure:
    """One line per named series; with smoothing, raw faint and EMA bold in one color (as TensorBoard).

    Smoothing runs on the full series, then both traces are min/max downsampled, so the EMA
    does not depend on how many points the chart happens to show. `look.dashes` gives a series a line
    dash ("dash", "dot"), e.g. test next to train in one run's colour; `look.full_names` is what the
    hover says for a series whose legend name is shortened.
    """
    traces = []
    for i, (name, (x, y)) in enumerate(series.items()):
        x = np.asarray(x, dtype=float)
        y = np.asarray(y, dtype=float)
        if x.size == 0:
            continue
        color = (look.colors or {}).get(name, COLORS[i % len(COLORS)])
        dx, dy = downsample_minmax(x, y, look.max_points)
        if look.smoothing > 0:
            raw = _line(dx, dy, name, color, 1, legendgroup=name, showlegend=False, opacity=0.25, hoverinfo="skip")
            traces.append(raw)
            dx, dy = downsample_minmax(x, ema_smooth(y, look.smoothing), look.max_points)
        sparse = dx.size <= SPARSE_POINTS  # e.g. test accuracy once per epoch: show the points themselves
        line = _line(dx, dy, name, color, 2, legendgroup=name, mode="lines+markers" if sparse else "lines")
        line.line.dash = (look.dashes or {}).get(name)
        if look.full_names and name in look.full_names:
            line.hovertemplate = f"{look.full_names[name]}: %{{y:.4g}}<extra></extra>"
        traces.append(line)
    fig = go.Figure(data=traces)
    if not traces:
        return _empty(_style(fig, frame.title, frame.height, frame.uirevision), frame.empty_text)
    more = dict(frame.layout or {})
    y_axis = dict(title=dict(text=frame.y_title), type="log" if look.log_y else "linear", **more.pop("yaxis", {}))
    axes = dict(xaxis=dict(title=dict(text=frame.x_title)), yaxis=y_axis)
    return _style(fig, frame.title, frame.height, frame.uirevision, hovermode="x unified", **axes, **more)


def _settled(x: np.ndarray, y: np.ndarray, warmup: float = 0.05) -> np.ndarray:
    """y without the first `warmup` of the x span (e.g. the step-0 accuracy of ~10%), when enough is left."""
    if y.size < 10 or not np.isfinite(x).any():
        return y
    lo, hi = np.nanmin(x), np.nanmax(x)
    keep = x >= lo + warmup * (hi - lo)
    return y[keep] if keep.sum() >= 5 else y


def zoom_range(series: Mapping[str, Series], lo: float = 0.0, hi: float = 1.0) -> list[float] | None:
    """A y range around the finite values of every series, padded, within [lo, hi]; None without values.

    Accuracies of 83-88% get an axis of about 82-89% instead of a fixed 0-100% that squashes them;
    the first 5% of a long series (the untrained start, e.g. 10% at step 0) does not widen the axis.
    """
    ys = [_settled(np.asarray(x, dtype=float), np.asarray(y, dtype=float)) for x, y in series.values()]
    ys = [y[np.isfinite(y)] for y in ys if y.size]
    values = np.concatenate(ys) if ys else np.empty(0)
    if values.size == 0:
        return None
    bottom, top = float(values.min()), float(values.max())
    pad = max(0.01 * (hi - lo), 0.1 * (top - bottom))
    return [max(lo, bottom - pad), min(hi, top + pad)]


def accuracy_figure(
    series: Mapping[str, Series],
    frame: Frame = ACCURACY,
    look: CurveLook = PLAIN,
    y_range: tuple[float, float] | str | None = "zoom",
) -> go.Figure:
    """`curves_figure` for fractions in [0, 1], shown as percent (its y axis titled "accuracy").

    y_range: "zoom" (default) fits the axis to the data within 0-100% (`zoom_range`); a (lo, hi)
    pair fixes it; None leaves it to plotly.
    """
    rng = zoom_range(series) if y_range == "zoom" else list(y_range) if y_range else None
    y_axis = dict(tickformat=".1%" if rng and rng[1] - rng[0] < 0.1 else ".0%", range=rng)
    fig = curves_figure(series, dataclasses.replace(frame, y_title="accuracy", layout={"yaxis": y_axis}), look)
    for t in fig.data:
        if t.hoverinfo != "skip":
            t.hovertemplate = (t.hovertemplate or "%{y:.4g}").replace("%{y:.4g}", "%{y:.2%}")
    return fig


# Report figures live in components/report_figures.py; these names stay importable from here.
from components.report_figures import confusion_matrix_figure, image_grid_figure, png_data_uri  # noqa: E402,F401
