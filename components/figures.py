"""Plotly figure builders for the dashboard: plain data in, `go.Figure` out.

No JAX and no Streamlit here, so every figure can be built and checked in a unit test.
All figures share one look (`_style`): plotly_white, fixed height, horizontal legend on
top, and a constant `uirevision` so a live refresh keeps the user's zoom and legend clicks.
"""

from __future__ import annotations

import base64
import math
import struct
import zlib
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go
from plotly.colors import qualitative

from components.series import Series, downsample_minmax, ema_smooth
from components.series import progress_text as progress_text  # re-export: lives in series.py, needs no plotly

TEMPLATE = "plotly_white"
COLORS = qualitative.Plotly
WRONG_COLOR = "#d62728"
TRUE_LINE_COLOR = "#7f7f7f"
MAX_LEGEND_FITS = 10  # beyond this a population's curves share one legend entry
Curve = tuple[np.ndarray, np.ndarray]


def _style(fig: go.Figure, title: str, height: int, uirevision: str) -> go.Figure:
    fig.update_layout(
        template=TEMPLATE,
        title=dict(text=title, x=0, xanchor="left", y=0.98, yanchor="top"),
        height=height,
        margin=dict(l=60, r=20, t=80, b=50),
        legend=dict(orientation="h", yanchor="bottom", y=1.02, xanchor="left", x=0),
        uirevision=uirevision,
    )
    return fig


def _empty(fig: go.Figure, text: str = "no data yet") -> go.Figure:
    fig.add_annotation(
        text=text, x=0.5, y=0.5, xref="paper", yref="paper", showarrow=False, font=dict(size=16, color="#999")
    )
    return fig.update_xaxes(visible=False).update_yaxes(visible=False)


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


def png_data_uri(gray: np.ndarray) -> str:
    """A 2-D uint8 array as a grayscale PNG data URI (stdlib only, so no Pillow dependency)."""
    h, w = gray.shape

    def chunk(tag: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data))

    raw = np.hstack([np.zeros((h, 1), np.uint8), gray.astype(np.uint8)]).tobytes()  # filter 0 per row
    ihdr = struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0)  # 8-bit grayscale
    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(raw, 6)) + chunk(b"IEND", b"")
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


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
    *,
    title: str = "Fit",
    max_points: int = 2000,
    height: int = 420,
    uirevision: str = "fit",
    colors: Mapping[str, str] | None = None,
    empty_text: str = "no data yet",
) -> go.Figure:
    """A model's curve over its data: data scatter, the true curve (dashed gray) and one curve per model.

    Works for any 1-D fit, a line (two points) or a curve such as a sine (many points). Axis ranges
    are fixed from the data and the true curve, so between refreshes a model's curve visibly slides
    onto the data instead of the axes rescaling around it.

    Args:
      data: (x, y) of the data points, or None while they are not written yet.
      curves: name -> (x, y) of each model's curve (K members of a population: K curves).
      truth: (x, y) of the true function, when known.
    """
    fig = _style(go.Figure(), title, height, uirevision)
    if data is None:
        return _empty(fig, empty_text)
    x, y = (np.asarray(v, dtype=float).ravel() for v in data)
    keep = _stride_indices(x.size, max_points)
    shown = f"data ({keep.size:,} of {x.size:,})" if keep.size < x.size else "data"
    marker = dict(size=4, color="#4c78a8", opacity=0.45)
    fig.add_trace(go.Scatter(x=x[keep], y=y[keep], mode="markers", name=shown, marker=marker))
    true_curve = _xy(truth) if truth is not None else None
    if true_curve is not None:
        fig.add_trace(_line(*true_curve, "true", TRUE_LINE_COLOR, 2, line_dash="dash"))
    many = len(curves) > MAX_LEGEND_FITS
    for i, (name, pair) in enumerate(curves.items()):
        color = (colors or {}).get(name, COLORS[i % len(COLORS)])
        label = name if not many else f"population ({len(curves)})"
        line = _line(*_xy(pair), label, color, 1.5 if many else 3, hovertext=name, hoverinfo="text+x+y")
        if many:
            line.update(legendgroup="fits", showlegend=i == 0)
        fig.add_trace(line)
    xr, yr = _fit_ranges(x, y, true_curve)
    fig.update_xaxes(range=xr, title_text="x")
    fig.update_yaxes(range=yr, title_text="y")
    return fig


def curves_figure(
    series: Mapping[str, Series],
    title: str,
    y_title: str,
    x_title: str = "step",
    smoothing: float = 0.0,
    max_points: int = 2000,
    log_y: bool = False,
    *,
    height: int = 360,
    uirevision: str = "curves",
    colors: Mapping[str, str] | None = None,
    empty_text: str = "no data yet",
) -> go.Figure:
    """One line per named series; with smoothing, raw faint and EMA bold in one color (as TensorBoard).

    Smoothing runs on the full series, then both traces are min/max downsampled, so the EMA
    does not depend on how many points the chart happens to show.
    """
    fig = go.Figure()
    drawn = 0
    for i, (name, (x, y)) in enumerate(series.items()):
        x = np.asarray(x, dtype=float)
        y = np.asarray(y, dtype=float)
        if x.size == 0:
            continue
        color = (colors or {}).get(name, COLORS[i % len(COLORS)])
        dx, dy = downsample_minmax(x, y, max_points)
        if smoothing > 0:
            raw = _line(dx, dy, name, color, 1, legendgroup=name, showlegend=False, opacity=0.25, hoverinfo="skip")
            fig.add_trace(raw)
            dx, dy = downsample_minmax(x, ema_smooth(y, smoothing), max_points)
        sparse = dx.size <= 50  # e.g. test accuracy once per epoch: show the points themselves
        fig.add_trace(_line(dx, dy, name, color, 2, legendgroup=name, mode="lines+markers" if sparse else "lines"))
        drawn += 1
    _style(fig, title, height, uirevision)
    if drawn == 0:
        return _empty(fig, empty_text)
    fig.update_layout(hovermode="x unified")
    fig.update_xaxes(title_text=x_title)
    fig.update_yaxes(title_text=y_title, type="log" if log_y else "linear")
    return fig


def zoom_range(series: Mapping[str, Series], lo: float = 0.0, hi: float = 1.0) -> list[float] | None:
    """A y range around the finite values of every series, padded, within [lo, hi]; None without values.

    Accuracies of 83-88% get an axis of about 82-89% instead of a fixed 0-100% that squashes them.
    """
    ys = [np.asarray(y, dtype=float) for _, y in series.values()]
    ys = [y[np.isfinite(y)] for y in ys if y.size]
    values = np.concatenate(ys) if ys else np.empty(0)
    if values.size == 0:
        return None
    bottom, top = float(values.min()), float(values.max())
    pad = max(0.01 * (hi - lo), 0.1 * (top - bottom))
    return [max(lo, bottom - pad), min(hi, top + pad)]


def accuracy_figure(
    series: Mapping[str, Series],
    title: str = "Accuracy",
    smoothing: float = 0.0,
    *,
    x_title: str = "step",
    max_points: int = 2000,
    y_range: tuple[float, float] | str | None = "zoom",
    **kwargs: Any,
) -> go.Figure:
    """`curves_figure` for fractions in [0, 1], shown as percent.

    y_range: "zoom" (default) fits the axis to the data within 0-100% (`zoom_range`); a (lo, hi)
    pair fixes it; None leaves it to plotly.
    """
    fig = curves_figure(
        series,
        title,
        "accuracy",
        x_title=x_title,
        smoothing=smoothing,
        max_points=max_points,
        **kwargs,
    )
    if fig.data:
        rng = zoom_range(series) if y_range == "zoom" else list(y_range) if y_range else None
        fig.update_yaxes(tickformat=".1%" if rng and rng[1] - rng[0] < 0.1 else ".0%", range=rng)
        fig.update_traces(hovertemplate="%{y:.2%}", selector=lambda t: t.hoverinfo != "skip")
    return fig


def confusion_matrix_figure(
    confusion: np.ndarray | list,
    class_names: Sequence[str],
    *,
    title: str = "Confusion matrix",
    normalize: bool = False,
    height: int = 480,
    uirevision: str = "confusion",
) -> go.Figure:
    """Heatmap with true class on y (top to bottom) and predicted on x, each cell's count written in it.

    normalize=True colors by row fraction (recall), which keeps the off-diagonal visible
    next to a dominant diagonal; the cell text stays the count.
    """
    counts = np.asarray(confusion)
    k = len(class_names)
    if counts.shape != (k, k):
        raise ValueError(f"confusion has shape {counts.shape}, expected ({k}, {k}) for {k} class names")
    names = [str(c) for c in class_names]
    z = counts.astype(float)
    if normalize:
        z = z / np.maximum(z.sum(axis=1, keepdims=True), 1)
    fig = go.Figure(
        go.Heatmap(
            z=z,
            x=names,
            y=names,
            text=counts,
            texttemplate="%{text}",
            colorscale="Blues",
            showscale=False,
            hovertemplate="true %{y} → pred %{x}: %{text}<extra></extra>",
        )
    )
    # category axes: class names like "0".."9" must not be read as numbers
    fig.update_xaxes(title_text="predicted", type="category", side="bottom")
    fig.update_yaxes(title_text="true", type="category", autorange="reversed")
    return _style(fig, title, height, uirevision)


def image_grid_figure(
    images: np.ndarray,
    labels: Sequence[int],
    preds: Sequence[int] | None,
    class_names: Sequence[str],
    cols: int = 8,
    *,
    title: str = "Predictions",
    uirevision: str = "images",
    tile_px: int = 90,
) -> go.Figure:
    """Grayscale images in a grid, each titled "pred (true)"; mistakes in red.

    The grid is one mosaic PNG in a `go.Image` with blank bands for the titles: a single
    trace renders far faster than N subplots, and the PNG is ~10x smaller than an RGB `z`
    array (64 MNIST digits: tens of kB instead of ~400 kB per refresh).
    """
    imgs = np.asarray(images)
    fig = go.Figure()
    if imgs.size == 0:
        return _empty(_style(fig, title, 200, uirevision), "no images")
    if imgs.dtype != np.uint8:  # floats in [0, 1] (or [0, 255]) to 8-bit gray
        scale = 255.0 if float(np.nanmax(imgs)) <= 1.0 else 1.0
        imgs = np.clip(np.nan_to_num(imgs) * scale, 0, 255).astype(np.uint8)
    n, h, w = imgs.shape[:3]
    cols = max(1, min(cols, n))
    rows = math.ceil(n / cols)
    band, pad = max(8, h // 3), 2  # title band above each tile, gap between tiles
    cell_h, cell_w = band + h, w + pad
    mosaic = np.full((rows * cell_h, cols * cell_w), 255, dtype=np.uint8)
    for i in range(n):
        r, c = divmod(i, cols)
        mosaic[r * cell_h + band : (r + 1) * cell_h, c * cell_w : c * cell_w + w] = imgs[i].reshape(h, w)
        true, pred = class_names[int(labels[i])], None if preds is None else int(preds[i])
        text = str(true) if pred is None else f"{class_names[pred]} ({true})"
        color = WRONG_COLOR if pred is not None and pred != int(labels[i]) else "#333"
        pos = dict(x=c * cell_w + w / 2, y=r * cell_h + band / 2, xanchor="center", yanchor="middle")
        fig.add_annotation(text=text, showarrow=False, font=dict(size=10, color=color), **pos)
    fig.add_trace(go.Image(source=png_data_uri(mosaic), hoverinfo="skip"))
    # explicit ranges: with `source` the browser would otherwise size axes only after decoding
    fig.update_xaxes(visible=False, range=[-0.5, mosaic.shape[1] - 0.5])
    fig.update_yaxes(visible=False, range=[mosaic.shape[0] - 0.5, -0.5], scaleanchor="x")
    height = 70 + rows * int(tile_px * cell_h / cell_w)
    _style(fig, title, height, uirevision)
    fig.update_layout(margin=dict(l=10, r=10, t=50, b=10))
    return fig
