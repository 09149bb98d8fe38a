"""What a metric grid's browser controls need besides its points, for Compare and Run detail's "All metrics".

A grid (components.compare_figures.metric_grid, drawn by static/line_grid.js with grid_view.js) offers the line
chart's controls (static/chart/controls.js): smoothing, log y and the x axis. Its lines carry each point's step,
value and wall seconds (`timed`); `browser` adds the name the controls are saved under, each line's start (wall
time = start + seconds), steps per epoch, and the scalar keys the x axis may be with where each line's run serves
a key's series (dashboard/server/rows_route.py, W&B's x-axis picker).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from dashboard.panels import compare_data, line_spec
from dashboard.reading import provider
from dashboard.reading.provider import MetricTable
from dashboard.server import rows_route


def timed(run_dir: Path, table: MetricTable, tag: str, x: str, lo: float, hi: float) -> tuple[Any, Any, Any]:
    """(x, y, wall) of `tag` for lo <= step <= hi; wall (seconds since the run's start, for the time axes) is
    NaN throughout where some of those records have none (the points and their times would not pair up)."""
    xs, ys = table.window(run_dir, tag, x, lo, hi)
    walls, _ = table.window(run_dir, tag, "wall", lo, hi)
    if walls.size != xs.size:
        walls = np.full(xs.size, np.nan)
    return xs, ys, walls


def scalar_keys(tables: Sequence[MetricTable]) -> list[str]:
    """Every scalar key of `tables`, first-logged first (the first table's, then keys only later ones have)."""
    seen: dict[str, None] = {}
    for table in tables:
        seen.update(dict.fromkeys(table.ordered_tags()))
    return list(seen)[: line_spec.MAX_XKEYS]


def browser(
    name: str, lines: Mapping[str, Sequence[provider.RunInfo]], keys: Sequence[str], palette: bool = False
) -> dict[str, Any]:
    """The grid's `browser` part (compare_figures.metric_grid) for lines labelled as `lines`' keys, each drawn
    from its runs (a band: the mean of several).

    name: the controls are saved under it (grids of one name follow one another's changes). keys: the scalar
    keys the x axis may be; a line of one run reads a key's series from that run, a band of several has no one
    value of another key at a step and is left out on such an axis. palette: colour the lines by the theme's.
    """
    starts: dict[str, list[float]] = {}
    epochs: dict[str, list[float]] = {}
    for label, runs in lines.items():
        for r in runs:
            t0, scale = provider.start_time(r.path), compare_data.epoch_scale(r.status)
            if t0 is not None:
                starts.setdefault(label, []).append(t0)
            if scale is not None:
                epochs.setdefault(label, []).append(scale)
    mean = lambda values: sum(values) / len(values)  # noqa: E731
    return {
        "controls": name,
        "palette": palette,
        "t0": {k: mean(v) for k, v in starts.items()},
        "epoch": {k: mean(v) for k, v in epochs.items()},
        "xkeys": list(keys),
        "series_urls": {label: rows_route.series_path(rs[0].run_id) for label, rs in lines.items() if len(rs) == 1},
    }
