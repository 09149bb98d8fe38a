"""A population's panels: every member's curve in one chart, one color per member, one row each.

The panel kinds are those of a single run (dashboard/panels/panel_kinds.py), from config.json "panels".
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import streamlit as st

from components import figures
from components.chart_look import CurveLook, Frame
from components.colors import distinct_colors
from dashboard.panels import line_spec, member_lines, pbt_panels
from dashboard.panels.panel_kinds import fit_version
from dashboard.panels.panels import live_chart, live_line
from dashboard.panels.run_numbers import tile_tags
from dashboard.reading import provider
from dashboard.reading.provider import MetricTable
from runstore import tags


@dataclass
class Population:
    """A population as its panels draw it: its member runs and, in the same order, their statuses, records and
    names (the labels its charts and table show)."""

    members: list[provider.RunInfo]
    statuses: list[dict[str, Any]]
    records: list[MetricTable]
    names: list[str]


def side_legend(fig: Any) -> Any:
    """Legend at the right, one entry per line: K members on top would wrap into rows over the title."""
    fig.update_layout(
        legend=dict(orientation="v", yanchor="top", y=1, xanchor="left", x=1.02, font=dict(size=11)),
        margin=dict(t=50, r=10),
    )
    return fig


def member_colors(run_dirs: list[Path], names: list[str]) -> dict[str, str]:
    """Each member's own run colour (`components.colors.run_color`), the same on every page, unless an
    earlier member has it: then the palette's next free one (two members never share a colour)."""
    colors = distinct_colors([d.name for d in run_dirs])
    return {n: colors[d.name] for d, n in zip(run_dirs, names, strict=True)}


def group_fit(run_dirs: list[Path], names: list[str], key: str, seeds_vary: bool, empty_text: str) -> None:
    """Member 0's data, the true curve and every member's latest curve."""

    def build() -> Any:
        data, _, truth = provider.fit(run_dirs[0])
        curves = {}
        for d, n in zip(run_dirs, names, strict=True):
            model = provider.fit(d)[1]
            if model is not None:
                curves[n] = model
        title = f"Fits of {len(names)} members" + (" (data of the first seed)" if seeds_vary else "")
        colors = member_colors(run_dirs, names)
        frame = Frame(title, height=figures.FIT.height, uirevision=key, empty_text=empty_text)
        fig = figures.fit_figure(data, curves, truth, frame, CurveLook(colors=colors))
        return side_legend(fig)

    live_chart(key, (tuple(fit_version(d) for d in run_dirs), tuple(names), empty_text), build)


def group_curves(
    population: Population,
    tag: str,
    key: str,
    *,
    title: str,
    accuracy: bool = False,
    marks: member_lines.Copies | None = None,
) -> None:
    """`tag` of every member overlaid, each in its member colour (`member_colors`: the same as in the population's
    fit and PBT charts on the page), the full run name in the hover.

    marks: a PBT population's copies, marked on each member's curve (the chart then starts on log y when its
    curves span decades: a member that blew up before its rescue would flatten the others).
    """
    members, records, names = population.members, population.records, population.names
    version = (tuple(r.offset for r in records), tuple(names), tag)
    if marks is not None:
        version += (tuple(len(c) for c in marks.events.values()),)

    def build() -> dict[str, Any]:
        drawn = member_lines.of_population(members, records, names)
        lines = [member_lines.line(m, tag) for m in drawn]
        more: dict[str, Any] = {"metric": tag, "y_title": tag.split("/")[-1], **member_lines.picker(drawn, (tag,))}
        if accuracy:
            curves = {s["name"]: (s["x"], s["y"]) for s in lines if s is not None}
            more |= {"percent": True, "y_range": figures.zoom_range(curves), "clamp": [0.0, 1.0]}
        if marks is not None:
            more["y_log_default"] = not accuracy and member_lines.wide(lines)
            lines += [member_lines.copy_marks(m, tag, marks) for m in drawn]
        return line_spec.spec(key, title, lines, **more)

    live_line(key, version, build)


def members_table(population: Population) -> None:
    """One row per member: its varied values, state, step and the latest value of each headline metric."""
    statuses, records, names = population.statuses, population.records, population.names
    columns = sorted(set().union(*(tile_tags(r) for r in records))) if records else []
    rows = []
    for s, r, n in zip(statuses, records, names, strict=True):
        row = {"member": n, "state": s.get("state", "?"), "step": s.get("step")}
        rows.append(row | {tag: r.last(tag) for tag in columns})
    config = {
        tag: st.column_config.NumberColumn(format="percent" if tag.endswith("acc") else "%.4g") for tag in columns
    }
    st.dataframe(rows, hide_index=True, column_config=config)


def accuracy_choice(population: Population, key: str, marks: member_lines.Copies | None = None) -> None:
    """Train or test accuracy of every member (a toggle between the two)."""
    split = st.segmented_control(
        "Accuracy",
        ["train", "test"],
        default="train",
        required=True,
        key="group_acc_split",
        label_visibility="collapsed",
    )
    tag = tags.TRAIN_ACC if split == "train" else tags.TEST_ACC
    title = f"{split.capitalize()} accuracy"
    group_curves(population, tag, key, title=title, accuracy=True, marks=marks)


def draw(population: Population, kinds: list[str], key: str, seeds_vary: bool, empty_text: str) -> None:
    """The population's panels: with a fit, the fit left and table and curves right; else table above curves."""
    members, names = population.members, population.names
    marks = pbt_panels.copy_marks(members, names)  # None unless the population trains with PBT
    draw_one = {
        "fit": lambda: group_fit([m.path for m in members], names, f"{key}_fit", seeds_vary, empty_text),
        "loss": lambda: group_curves(population, tags.TRAIN_LOSS, f"{key}_loss", title="Train loss", marks=marks),
        "accuracy": lambda: accuracy_choice(population, f"{key}_acc", marks),
        "pbt_lr": lambda: pbt_panels.lr_chart(members, population.records, names, f"{key}_pbt_lr"),
    }
    kinds = [k for k in kinds if k in draw_one] + (["pbt_lr"] if marks is not None else [])
    if "fit" in kinds:
        left, right = st.columns([3, 2])
        with left:
            draw_one["fit"]()
        with right:
            members_table(population)
            for kind in kinds:
                if kind != "fit":
                    draw_one[kind]()
        return
    members_table(population)
    for col, kind in zip(st.columns(max(1, len(kinds))), kinds, strict=False):
        with col:
            draw_one[kind]()
