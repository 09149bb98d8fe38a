"""Figures of a sweep: parallel coordinates of its trials and the best value so far. Pure: rows in, figure out.

A row is one trial as the sweep page reads it from Optuna: {"trial", "state", "value", "params": {...},
"end": seconds}. Numeric settings stay numbers, so their axis is ordered as numbers (0.001 < 0.01 < 0.1,
not as text); a setting with text values (e.g. the optimizer) gets an axis of its sorted categories.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import plotly.graph_objects as go

from components.figure_style import _empty, _style


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def _axis(name: str, values: list[Any]) -> dict[str, Any]:
    """One parallel-coordinates dimension: numbers as numbers (log scale as log10), text as sorted ticks."""
    if all(_is_number(v) for v in values):
        positive = all(v > 0 for v in values)
        spread = max(values) / min(values) if positive and min(values) > 0 else 1
        if positive and spread >= 100:  # e.g. a learning rate swept over decades: even spacing per decade
            logs = [math.log10(v) for v in values]
            lo, hi = math.floor(min(logs)), math.ceil(max(logs))
            ticks = list(range(lo, hi + 1))
            return {
                "label": f"{name} (log)",
                "values": logs,
                "tickvals": ticks,
                "ticktext": [f"{10.0**t:g}" for t in ticks],
            }
        return {"label": name, "values": [float(v) for v in values]}
    cats = sorted({str(v) for v in values}, key=lambda s: (not _num_text(s), _num_key(s)))
    index = {c: i for i, c in enumerate(cats)}
    return {
        "label": name,
        "values": [index[str(v)] for v in values],
        "tickvals": list(index.values()),
        "ticktext": cats,
    }


def _num_text(s: str) -> bool:
    try:
        float(s)
    except ValueError:
        return False
    return True


def _num_key(s: str) -> Any:
    return float(s) if _num_text(s) else s


def parallel_coordinates(
    rows: Sequence[Mapping[str, Any]], metric: str = "value", direction: str = "minimize"
) -> go.Figure:
    """One line per finished trial across every swept setting and the objective, coloured by the objective
    (on the page: the best trials contrast most with its background, whichever the `direction`)."""
    done = [r for r in rows if r.get("state") == "COMPLETE" and _is_number(r.get("value"))]
    if not done:
        return _style(_empty(go.Figure(), "No finished trials yet"), "Trials", 360, "sweep")
    names = sorted({k for r in done for k in r.get("params", {})})
    dims = [_axis(n, [r["params"].get(n) for r in done]) for n in names]
    values = [float(r["value"]) for r in done]
    dims.append({"label": metric, "values": values})
    fig = go.Figure(
        go.Parcoords(
            line={
                "color": values,
                "colorscale": "Viridis_r" if direction == "minimize" else "Viridis",
                "showscale": True,
                "colorbar": {"title": metric},
            },
            dimensions=dims,
            # on the page: the theme's readable scale, the best trials contrasting most (inplace_chart.js)
            meta={"scale": "low" if direction == "minimize" else "high"},
        )
    )
    return _style(fig, f"Trials ({len(done)} finished)", 420, "sweep-parcoords")


def best_so_far(rows: Sequence[Mapping[str, Any]], metric: str = "value", direction: str = "minimize") -> go.Figure:
    """Each finished trial's value against its end time, and the best so far (the running minimum, or
    maximum when the study maximises) as a step line."""
    done = sorted(
        (r for r in rows if r.get("state") == "COMPLETE" and _is_number(r.get("value")) and _is_number(r.get("end"))),
        key=lambda r: r["end"],
    )
    if not done:
        return _style(_empty(go.Figure(), "No finished trials yet"), "Best so far", 360, "sweep")
    t0 = min(r["end"] for r in done)
    xs = [r["end"] - t0 for r in done]
    ys = [float(r["value"]) for r in done]
    better = min if direction == "minimize" else max
    best, running = [], ys[0]
    for y in ys:
        running = better(running, y)
        best.append(running)
    fig = go.Figure()
    fig.add_scatter(
        x=xs, y=ys, mode="markers", name="trial", text=[f"trial {r['trial']}" for r in done], marker={"color": "#999"}
    )
    fig.add_scatter(x=xs, y=best, mode="lines", name="best so far", line={"shape": "hv", "color": "#1f77b4"})
    fig.update_xaxes(title_text="seconds since the first finished trial")
    fig.update_yaxes(title_text=metric)
    return _style(fig, "Best so far", 360, "sweep-best")
