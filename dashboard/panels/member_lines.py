"""A population's members as line series of the chart engine (line_spec), and the marks of PBT's copies.

Each member draws in its own colour (group_panels.member_colors), its full run name in the hover. A population
trained with PBT marks every copy (a member taking another's weights and learning rate): on its learning-rate
line at the new rate, on its metric curves at its last value at or before the copy's step (that step's metric
row still holds its own values). A mark is a series of mode "marks" (`line_spec.marks`: points, never
smoothed, hovering the copy's text) with its member's wall time at that step, so the wall-time and
relative-time x axes put it on its curve too; the marks share their member's legend entry (no entry of their own,
as in W&B and TensorBoard: a mark's hover names whom it copied). The learning rate is drawn as steps on a log axis.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from components.colors import distinct_colors
from components.pbt_figures import CopyEvent, copy_text, value_at
from dashboard.panels import line_spec
from dashboard.reading import provider
from dashboard.reading.provider import MetricTable
from dashboard.server import rows_route
from runstore import tags

LR_TITLE = "Learning rate (PBT)"
WIDE_DECADES = 3.0  # a metric chart of PBT whose positive curves span more decades than this starts on log y


@dataclass(frozen=True)
class Member:
    """One member's records and how its lines look: `name` is its short name (legend), `style` its colour and
    full name; `run` its run id (for the x-axis picker's keys) and `t0` its start (a wall-time x axis)."""

    name: str
    records: MetricTable
    style: line_spec.Style = line_spec.Style()
    run: str | None = None
    t0: float | None = None


@dataclass(frozen=True)
class Copies:
    """A PBT population's copies: member name -> its copy events, member index -> name (whom it copied)."""

    events: Mapping[str, Sequence[CopyEvent]]
    sources: Mapping[int, str]


def of_population(
    runs: Sequence[provider.RunInfo], records: Sequence[MetricTable], names: Sequence[str]
) -> list[Member]:
    """The members `names` with their records; with their `runs` (as many), each in its own colour (two members
    never share one: `distinct_colors`, as the population's fit chart), its full name and its run's times."""
    if len(runs) != len(names):
        return [Member(n, r) for n, r in zip(names, records, strict=True)]
    colors = distinct_colors([m.run_id for m in runs])
    return [
        Member(n, r, line_spec.Style(colors[m.run_id], label=m.name), m.run_id, provider.start_time(m.path))
        for m, r, n in zip(runs, records, names, strict=True)
    ]


def line(member: Member, tag: str) -> dict[str, Any] | None:
    """The member's series of `tag` (None while it has no point)."""
    return line_spec.series(member.records, tag, member.name, member.style, run=member.run, t0=member.t0)


def _wall_at(records: MetricTable, tag: str, step: int) -> float | None:
    """The member's wall seconds at its last record of `tag` at or before `step` (None without wall times)."""
    steps, _ = records.series(tag, "step")
    wall, _ = records.series(tag, "wall")
    return value_at((steps, wall), step) if wall.size == steps.size else None


def copy_marks(member: Member, tag: str, copies: Copies) -> dict[str, Any] | None:
    """A mark at each of the member's copies on its `tag` series (on pbt/lr: at the new rate); None if none."""
    curve = member.records.series(tag)
    events = []
    for e in copies.events.get(member.name, ()):
        y = e.new_lr if tag == tags.PBT_LR else value_at(curve, e.step)
        if y is None or not np.isfinite(y) or (tag == tags.PBT_LR and y <= 0):
            continue
        text = f"{member.name}: " + copy_text(e, copies.sources.get(e.source))
        events.append((e.step, _wall_at(member.records, tag, e.step), y, text))
    name = f"{member.name} copies"
    if not events:
        return None
    return line_spec.marks(name, events, member.style, run=member.run, t0=member.t0, of=member.name)


def wide(lines: Sequence[dict[str, Any] | None], decades: float = WIDE_DECADES) -> bool:
    """Whether the positive curves span more than `decades` above 1 (a loss that blew up before its member was
    rescued by a copy flattens every other curve on a linear axis); accuracies never are."""
    ys = np.array([v for s in lines if s is not None for v in s["y"] if v is not None], dtype=float)
    return bool(ys.size and ys.min() > 0 and ys.max() > 1 and ys.max() / ys.min() > 10**decades)


def picker(members: Sequence[Member], drawn: tuple[str, ...]) -> dict[str, Any]:
    """The x-axis picker's keys (the first member's other scalars) and where each member's series are fetched."""
    runs = [m.run for m in members if m.run is not None]
    if not runs:
        return {}
    return {
        "series_urls": {r: rows_route.series_path(r) for r in runs},
        "xkeys": line_spec.xkeys(members[0].records, drawn),
    }


def lr_spec(key: str, members: Sequence[Member], copies: Copies, **more: Any) -> dict[str, Any]:
    """Every member's learning rate over steps (log y, as steps: a logged rate holds from the row before), each in
    its colour, with a mark at each copy's new rate."""
    lines = [line(m, tags.PBT_LR) for m in members] + [copy_marks(m, tags.PBT_LR, copies) for m in members]
    return line_spec.spec(
        key,
        LR_TITLE,
        lines,
        metric=tags.PBT_LR,
        y_title="learning rate",
        y_log_default=True,
        line_shape="vh",
        empty="no learning rates yet",
        **picker(members, (tags.PBT_LR,)),
        **more,
    )
