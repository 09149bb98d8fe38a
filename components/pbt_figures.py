"""Figures of population-based training: learning-rate schedules and copy events. Pure: data in, figure out.

A PBT member's lineage (artifacts/tables/pbt__lineage.json, written by training/engine/pbt.py) lists every
time it copied another member: the step, the source member's index, its learning rate before and
after, and why ("ranked low" or "diverged"). The metric row of that step still holds the member's
own values; its next row already trains on the copied weights with the new learning rate.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import plotly.graph_objects as go

from components.figure_style import _empty, _style
from components.figures import COLORS, _finite_or_nan

Curve = tuple[np.ndarray, np.ndarray]
MARKER_LINE = "#ffffff"


@dataclass(frozen=True)
class CopyEvent:
    """One copy: at `step` this member took member `source`'s weights and lr `old_lr` became `new_lr`."""

    step: int
    source: int
    old_lr: float
    new_lr: float
    reason: str


def _number(v: Any) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return float("nan")


def copy_events(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[CopyEvent]:
    """The events of a lineage table, by step; rows that are not a copy (wrong types, missing columns) are left out."""
    need = ("step", "source", "old_lr", "new_lr", "reason")
    if not set(need) <= set(columns):
        return []
    at = {c: list(columns).index(c) for c in need}
    events = []
    for r in rows:
        step, source = _number(r[at["step"]]), _number(r[at["source"]])
        if not (np.isfinite(step) and np.isfinite(source)):
            continue
        reason = str(r[at["reason"]])
        events.append(CopyEvent(int(step), int(source), _number(r[at["old_lr"]]), _number(r[at["new_lr"]]), reason))
    return sorted(events, key=lambda e: e.step)


def copy_text(event: CopyEvent, source_name: str | None = None) -> str:
    """ "step 50: copied member 2 (lr=0.3), ranked low; lr 0.0001 → 0.24" (the hover of a copy marker)."""
    who = f"member {event.source}" + (f" ({source_name})" if source_name else "")
    return f"step {event.step}: copied {who}, {event.reason}; lr {event.old_lr:.3g} → {event.new_lr:.3g}"


def value_at(curve: Curve, step: int) -> float | None:
    """The curve's last finite value at or before `step` (None if it has none): where a copy marker sits."""
    x, y = (np.asarray(a, dtype=float) for a in curve)
    keep = (x <= step) & np.isfinite(y)
    return float(y[keep][-1]) if keep.any() else None


def _marker_trace(name: str, xs: list[float], ys: list[float], texts: list[str], color: str) -> go.Scatter:
    return go.Scatter(
        x=xs,
        y=ys,
        mode="markers",
        name=f"{name} copies",
        legendgroup=name,
        showlegend=False,
        marker=dict(symbol="diamond", size=10, color=color, line=dict(color=MARKER_LINE, width=1.5)),
        text=texts,
        hovertemplate="%{text}<extra></extra>",
    )


def _trace_colors(fig: go.Figure) -> dict[str, str]:
    """{trace name: line colour} of the figure's lines (a member's markers take its line's colour)."""
    return {t.name: t.line.color for t in fig.data if getattr(t, "line", None) is not None and t.line.color}


def mark_copies(
    fig: go.Figure,
    curves: Mapping[str, Curve],
    copies: Mapping[str, Sequence[CopyEvent]],
    source_names: Mapping[int, str] | None = None,
) -> go.Figure:
    """Add a marker on each member's curve at each of its copies, hovering the copy's `copy_text`.

    Args:
      fig: a figure with one line per member, named as in `curves` (e.g. `figures.curves_figure`).
      curves: member name -> (steps, values) of the plotted metric.
      copies: member name -> its copy events.
      source_names: member index -> name, to say whom a member copied.
    """
    colors = _trace_colors(fig)
    for i, (name, events) in enumerate(copies.items()):
        if name not in curves or not events:
            continue
        xs, ys, texts = [], [], []
        for e in events:
            y = value_at(curves[name], e.step)
            if y is not None:
                xs.append(e.step)
                ys.append(y)
                texts.append(f"{name}: " + copy_text(e, (source_names or {}).get(e.source)))
        if xs:
            fig.add_trace(_marker_trace(name, xs, ys, texts, colors.get(name, COLORS[i % len(COLORS)])))
    return fig


def log_axis_when_wide(fig: go.Figure, curves: Mapping[str, Curve], decades: float = 3.0) -> go.Figure:
    """A log y axis when the positive curves span more than `decades` (a loss that blew up before its
    member was rescued by a copy would flatten every other curve on a linear axis); accuracies stay linear."""
    ys = [np.asarray(y, dtype=float) for _, y in curves.values()]
    values = np.concatenate([y[np.isfinite(y)] for y in ys]) if ys else np.empty(0)
    if values.size and values.min() > 0 and values.max() > 1 and values.max() / values.min() > 10**decades:
        fig.update_yaxes(type="log", exponentformat="power")
    return fig


def lr_figure(
    series: Mapping[str, Curve],
    copies: Mapping[str, Sequence[CopyEvent]] | None = None,
    source_names: Mapping[int, str] | None = None,
    *,
    colors: Mapping[str, str] | None = None,
    title: str = "Learning rate (PBT)",
    height: int = 360,
    uirevision: str = "pbt_lr",
    empty_text: str = "no learning rates yet",
) -> go.Figure:
    """Each member's learning rate over steps (log axis, as steps), with a marker where it copied another member.

    `series`: member name -> (steps, pbt/lr). A logged value is the rate of the steps up to its row,
    so the line changes level at the row before (shape "vh"); a copy's marker sits at its new rate.
    """
    fig = go.Figure()
    for i, (name, (x, y)) in enumerate(series.items()):
        x, y = np.asarray(x, dtype=float), _finite_or_nan(np.asarray(y, dtype=float))
        if x.size == 0:
            continue
        color = (colors or {}).get(name, COLORS[i % len(COLORS)])
        line = dict(color=color, width=2, shape="vh")
        fig.add_trace(
            go.Scatter(x=x, y=y, mode="lines", name=name, legendgroup=name, line=line, hovertemplate="lr %{y:.3g}")
        )
    _style(fig, title, height, uirevision)
    if not fig.data:
        return _empty(fig, empty_text)
    for name, events in (copies or {}).items():
        events = [e for e in events if np.isfinite(e.new_lr) and e.new_lr > 0 and name in series]
        if events:
            texts = [f"{name}: " + copy_text(e, (source_names or {}).get(e.source)) for e in events]
            color = (colors or {}).get(name) or _trace_colors(fig).get(name, COLORS[0])
            xs, ys = [e.step for e in events], [e.new_lr for e in events]
            fig.add_trace(_marker_trace(name, xs, ys, texts, color))
    fig.update_layout(hovermode="closest")
    fig.update_xaxes(title_text="step")
    fig.update_yaxes(title_text="learning rate", type="log", exponentformat="power")
    return fig
