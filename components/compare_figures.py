"""Figures for comparing runs: small multiples of every metric, population bands, parallel coordinates.

Plain data in, `go.Figure` out: no JAX, no Streamlit, no run store.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from components import figures
from components.chart_look import CurveLook, Frame
from components.figure_style import set_template
from components.series import Series, ema_smooth
from runstore.metrics.downsample import bucket_extremes

GRID_POINTS = 400  # per curve in a small multiple; a zoom re-reads the range at full resolution


@dataclass(frozen=True)
class Band:
    """A population's curve: the mean and a band (min-max or +-std) on a common x grid; `wall`, where known,
    the members' mean time (seconds since their start) at each x, for a browser's time axis."""

    x: np.ndarray
    mean: np.ndarray
    low: np.ndarray
    high: np.ndarray
    wall: np.ndarray | None = None


def _rgba(hex_color: str, alpha: float) -> str:
    h = hex_color.lstrip("#")
    r, g, b = (int(h[i : i + 2], 16) for i in (0, 2, 4))
    return f"rgba({r},{g},{b},{alpha})"


def _clean(y: np.ndarray) -> np.ndarray:
    return np.where(np.isfinite(y), y, np.nan)


def _run_traces(
    name: str, xy: Series | tuple[Any, Any, Any], color: str, smoothing: float, max_points: int
) -> list[go.Scattergl]:
    """Raw (faint when smoothed) and smoothed line of one run, downsampled keeping spikes.

    xy: (x, y), or (x, y, wall): each point's seconds since the run's start, carried as the trace's customdata
    for the browser's time axes (static/line_grid.js)."""
    x, y = (np.asarray(v, dtype=float) for v in xy[:2])
    if x.size == 0:
        return []
    wall = np.asarray(xy[2], dtype=float) if len(xy) > 2 and np.asarray(xy[2]).size == x.size else None
    mode = "lines" if min(x.size, max_points) > figures.SPARSE_POINTS else "lines+markers"
    common = dict(name=name, legendgroup=name, mode=mode)

    def trace(values: np.ndarray, **style: Any) -> go.Scatter:
        keep = _kept(x, values, max_points)
        times = None if wall is None else _clean(wall[keep])
        return go.Scatter(x=x[keep], y=_clean(values[keep]), customdata=times, **common, **style)

    if smoothing <= 0:
        return [trace(y, line=dict(color=color, width=1.6))]
    faint = trace(y, line=dict(color=color, width=1), opacity=0.25, hoverinfo="skip")
    return [faint, trace(ema_smooth(y, smoothing), line=dict(color=color, width=1.6))]


def _kept(x: np.ndarray, y: np.ndarray, max_points: int) -> np.ndarray:
    """Indices of the points `components.series.downsample_minmax` keeps, so a run's times follow its values."""
    if x.size <= max_points:
        return np.arange(x.size)
    keep = np.unique(bucket_extremes(x, y, max_points // 4))
    return keep[np.argsort(x[keep], kind="stable")]


def _band_traces(name: str, band: Band, color: str) -> list[go.Scatter]:
    """The band as one filled polygon (its upper edge, then its lower one backwards), then the mean line on top."""
    if band.x.size == 0:
        return []
    ok = np.isfinite(band.low) & np.isfinite(band.high)
    x, lo, hi = band.x[ok], band.low[ok], band.high[ok]
    wall = band.wall if band.wall is not None and band.wall.size == band.x.size else None
    poly = go.Scatter(
        x=np.concatenate([x, x[::-1]]),
        y=np.concatenate([hi, lo[::-1]]),
        fill="toself",
        fillcolor=_rgba(color, 0.18),
        line=dict(width=0),
        hoverinfo="skip",
        name=name,
        legendgroup=name,
        showlegend=False,
        customdata=None if wall is None else _clean(np.concatenate([wall[ok], wall[ok][::-1]])),
    )
    mean = go.Scatter(
        x=band.x,
        y=_clean(band.mean),
        line=dict(color=color, width=2),
        name=name,
        legendgroup=name,
        customdata=None if wall is None else _clean(wall),
    )
    return [poly, mean]


@dataclass(frozen=True)
class GridData:
    """What a grid of small multiples draws.

    tags: the subplots, in order.
    curves: tag -> {run label: (x, y)} of the runs drawn as lines (or (x, y, wall): see `_run_traces`).
    bands: tag -> {population label: Band}, drawn as mean + shaded band.
    missing: tag -> labels of the selected runs that never logged it (named in the subplot title).
    """

    tags: Sequence[str]
    curves: Mapping[str, Mapping[str, Series]]
    bands: Mapping[str, Mapping[str, Band]] | None = None
    missing: Mapping[str, Sequence[str]] | None = None


GRID_LOOK = CurveLook(max_points=GRID_POINTS)  # raw lines, linear y, GRID_POINTS a line
GRID_FRAME = Frame(title="", uirevision="compare")  # a grid's panels are titled by their tags


def metric_grid(
    data: GridData,
    look: CurveLook = GRID_LOOK,
    frame: Frame = GRID_FRAME,
    *,
    cols: int = 3,
    browser: Mapping[str, Any] | None = None,
) -> go.Figure:
    """Small multiples: one subplot per tag, one line (or band) per run or population, one shared legend.

    Args:
      data: the tags, the runs' curves, the populations' bands and who lacks a tag.
      look: `colors` (label, run or population -> colour, the same in every subplot; #444 for one not named),
        `smoothing`, `log_y` (every panel but accuracy's) and `max_points` a line; dashes and full names unused.
      frame: `x_title` (under the bottom row), `uirevision` and `layout` (merged into the figure's); a grid has
        no title of its own and sizes itself by its rows, so title, y_title, height and empty_text are unused.
      browser: more for the browser's grid (static/line_grid.js), e.g. `controls` (the name its smoothing, log y
        and x-axis controls are saved under: shown when given), `t0` and `epoch` ({label: start in unix
        seconds, steps per epoch}) for its x axes, `palette` (colour the lines by the theme's palette).
    """
    tags, curves, bands, missing = data.tags, data.curves, data.bands, data.missing
    colors, x_title = look.colors or {}, frame.x_title
    cols = max(1, min(cols, len(tags) or 1))
    rows = max(1, math.ceil(len(tags) / cols))
    lacking_by_panel = [list((missing or {}).get(tag, ())) for tag in tags]
    log_by_panel = [bool(look.log_y and "acc" not in tag) for tag in tags]
    titles = [
        f"{tag}<br><sup>not logged by {', '.join(lacking)}</sup>" if lacking else tag
        for tag, lacking in zip(tags, lacking_by_panel, strict=True)
    ]
    spacing = 0.6 / rows / 2 + 0.04
    if rows > 1:
        spacing = min(spacing, 0.5 / (rows - 1))  # plotly refuses more than 1 / (rows - 1): many tags, many rows
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=titles or None, vertical_spacing=spacing)
    shown: set[str] = set()
    every: list[go.Scatter] = []
    for i, tag in enumerate(tags):
        row, col = i // cols + 1, i % cols + 1
        traces = []
        for name, xy in (curves.get(tag) or {}).items():
            traces += _run_traces(name, xy, colors.get(name, "#444"), look.smoothing, look.max_points)
        for name, band in ((bands or {}).get(tag) or {}).items():
            traces += _band_traces(name, band, colors.get(name, "#444"))
        for t in traces:
            t.showlegend = t.showlegend is not False and t.name not in shown and t.hoverinfo != "skip"
            if t.showlegend:
                shown.add(t.name)
            t.xaxis, t.yaxis = f"x{i + 1 if i else ''}", f"y{i + 1 if i else ''}"  # make_subplots' axes, row-major
        every += traces
        fig.update_yaxes(type="log" if log_by_panel[i] else "linear", row=row, col=col)
        fig.update_xaxes(title_text=x_title if row == rows else None, row=row, col=col)
    fig.add_traces(every)  # at once: add_trace(row=, col=) per trace cost 50 runs' comparison ~0.1 s a grid
    set_template(fig).update_layout(
        height=90 + 260 * rows,
        margin=dict(l=50, r=20, t=90, b=40),
        legend=dict(orientation="h", yanchor="bottom", y=1.0 + 40 / (90 + 260 * rows), xanchor="left", x=0),
        hovermode="closest",
        uirevision=frame.uirevision,
        # What the dashboard's canvas grid (dashboard/panels/static/line_grid.js) draws the panels from.
        meta=dict(
            grid=dict(
                cols=cols,
                titles=list(tags),
                lacking=lacking_by_panel,
                log=log_by_panel,
                x_title=x_title,
                **(browser or {}),
            )
        ),
        **(frame.layout or {}),
    )
    return fig


def parallel_coordinates(
    rows: Sequence[Mapping[str, Any]], settings: Sequence[str], metrics: Sequence[str], color_by: str | None = None
) -> go.Figure:
    """One line per run across its settings (left) and final metrics (right); text values become categories.

    Coloured by `color_by` (a metric, default the last one), so good and bad runs stand apart.
    """
    dims = []
    for name in [*settings, *metrics]:
        values = [r.get(name) for r in rows]
        numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values if v is not None)
        if numeric and any(v is not None for v in values):
            vals = np.array([np.nan if v is None else float(v) for v in values])
            dims.append(dict(label=name, values=vals))
        else:
            cats = sorted({str(v) for v in values})
            codes = [cats.index(str(v)) for v in values]
            dims.append(dict(label=name, values=codes, tickvals=list(range(len(cats))), ticktext=cats))
    color_by = color_by or (metrics[-1] if metrics else None)
    line: dict[str, Any] = {}
    if color_by is not None:
        c = [r.get(color_by) for r in rows]
        if all(isinstance(v, (int, float)) for v in c if v is not None) and any(v is not None for v in c):
            line = dict(
                color=[np.nan if v is None else v for v in c],
                colorscale="Viridis",
                showscale=True,
                colorbar=dict(title=color_by),
            )
    # on the page: the theme's readable scale, high values contrasting most (inplace_chart.js)
    fig = go.Figure(go.Parcoords(dimensions=dims, line=line, meta={"scale": "high"} if line else None))
    set_template(fig).update_layout(height=420, margin=dict(l=80, r=80, t=60, b=30))
    return fig
