"""A line chart's spec: what the browser's chart engine (static/chart/engine.js) draws, built from a run's records.

A spec is plain data: the chart's title and axis names, its series (name, colour, dash, and the points:
step, wall seconds and value, min/max downsampled so spikes stay), the byte offset its records were read to
and the feed that appends the rows written after it (the tab's push stream, dashboard/server/push_route.py), the name its controls
are saved under in the browser (the metric's, so Live and Run detail share them), and the run's other scalar
keys for the x-axis picker. No figure library and no page code here: `line_chart.draw` sends it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from components import figures
from dashboard import refresh_timings
from dashboard.reading import provider
from dashboard.reading.provider import MetricTable
from dashboard.server import push_route

LIVE_POINTS = 800  # points per series a spec carries (~1 per pixel of a half-page chart); appends add to them
MAX_XKEYS = 100  # the x-axis picker lists at most this many of a run's scalar keys


@dataclass(frozen=True)
class Style:
    """How a series looks: its colour (None: the browser's palette), dashed, and the name its hover shows."""

    color: str | None = None
    dash: bool = False
    label: str | None = None


def _floats(v: np.ndarray) -> list[float | None]:
    """JSON-safe values: NaN and inf become null (a gap)."""
    return [float(x) if math.isfinite(x) else None for x in np.asarray(v, dtype=float).tolist()]


def _kept(x: np.ndarray, y: np.ndarray, max_points: int) -> np.ndarray:
    """Indices of at most `max_points` points keeping the curve's shape (components.series.downsample_minmax)."""
    if x.size <= max_points:
        return np.arange(x.size)
    keep = np.unique(provider.downsample(x, y, max_points // 4))
    return keep[np.argsort(x[keep], kind="stable")]


def series(
    records: MetricTable, tag: str, name: str, style: Style = Style(), run: str | None = None, t0: float | None = None
) -> dict[str, Any] | None:
    """One series of `tag` from `records` (None while it has no point): steps, wall seconds and values, downsampled.

    run: the run the series comes from (its x-axis keys are fetched from it); t0: the run's start (unix seconds),
    so wall time is t0 + wall.
    """
    step, y = records.series(tag, "step")
    if not step.size:
        return None
    wall, wy = records.series(tag, "wall")
    if wall.size != step.size:  # a record without a wall time: relative and wall time are gaps for this series
        wall = np.full(step.size, np.nan)
    keep = _kept(step, y, LIVE_POINTS)
    return {
        "name": name,
        "tag": tag,
        "x": _floats(step[keep]),
        "wall": _floats(wall[keep]),
        "y": _floats(y[keep]),
        **_look(style),
        "run": run,
        "t0": t0,
    }


def points(name: str, xy: tuple[Any, Any], style: Style = Style(), mode: str = "lines") -> dict[str, Any]:
    """A series of given (x, y) (a fit's data, true curve or model): mode "points" (a scatter) or "lines"."""
    x, y = (np.asarray(v, dtype=float).ravel() for v in xy)
    order = np.argsort(x, kind="stable")
    return {
        "name": name,
        "x": _floats(x[order]),
        "y": _floats(y[order]),
        **_look(style),
        "mode": mode,
    }


def marks(
    name: str,
    events: list[tuple[float, float | None, float, str]],
    style: Style = Style(),
    run: str | None = None,
    t0: float | None = None,
    of: str | None = None,
) -> dict[str, Any]:
    """Events drawn as points on a chart's curves (mode "marks": never smoothed, each hovering its own text).

    events: (step, wall seconds or None, value, text) each; run and t0 as `series`'s, so every x axis places them.
    of: the name of the series whose legend entry they share (a member's copies: its curve's), else their own.
    """
    events = sorted(events, key=lambda e: e[0])
    return {
        "name": name,
        "x": _floats(np.array([e[0] for e in events], dtype=float)),
        "wall": _floats(np.array([np.nan if e[1] is None else e[1] for e in events], dtype=float)),
        "y": _floats(np.array([e[2] for e in events], dtype=float)),
        "texts": [e[3] for e in events],
        **_look(style),
        "mode": "marks",
        "run": run,
        "t0": t0,
        "of": of,
    }


def _look(style: Style) -> dict[str, Any]:
    """A series' colour, dash and hover name, as the browser's engine reads them."""
    return {"color": style.color, "dash": style.dash, "label": style.label}


def feed(run_id: str, offset: int, tag_index: dict[str, int], line: dict[str, Any] | None = None) -> dict[str, Any]:
    """The feed of a chart built from run `run_id`'s records up to byte `offset`: the rows of each tag after it
    are appended to series `tag_index[tag]`; `line` ({"series", "x", "w", "b"}) moves a fitted line y = w x + b
    to each new record's (w, b)."""
    asked = list(tag_index) + ([line["w"], line["b"]] if line else [])
    return {
        "stream": push_route.route(),
        "run": run_id,
        "asked": asked[: push_route.MAX_TAGS],
        "reopen_ms": refresh_timings.ms("push_reopen"),
        "offset": offset,
        "tags": tag_index,
        "line": line,
        "gap_ms": refresh_timings.ms("feed_gap"),
    }


def spec(
    key: str,
    title: str,
    lines: list[dict[str, Any] | None],
    *,
    metric: str,
    y_title: str = "",
    kind: str = "line",
    **more: Any,
) -> dict[str, Any]:
    """The chart's spec: `lines` (series or points; None ones left out), saved controls under `metric`.

    more: percent (values shown as %), y_log_default (log y until the browser's user picks), line_shape ("vh":
    steps, a value holding from the point before), y_range (an axis zoomed to the data, widened by appends within
    clamp), clamp, x_range (a fit's fixed x axis), x_title, height, empty (the text while no series has a
    point), feed (`feed`), xkeys (the scalar keys the x axis may be) and series_urls ({run: rows_route.series_path}).
    """
    out = {"kind": kind, "key": key, "title": title, "y_title": y_title, "metric": metric, "height": 360}
    out["sparse_points"] = figures.SPARSE_POINTS  # as plotly's figures and compare's grids: markers up to this
    out["series"] = [s for s in lines if s is not None]
    out.update(more)
    return out


def xkeys(records: MetricTable, drawn: tuple[str, ...] = ()) -> list[str]:
    """The run's scalar keys an x axis may be (W&B's picker), first-logged first, the drawn ones left out."""
    return [t for t in records.ordered_tags() if t not in drawn][:MAX_XKEYS]
