"""Compare the selected runs: every metric as small multiples, population bands, what differs, hyperparameters.

Reads runs through `dashboard.state` (shared bounded tables), computes with `dashboard.panels.compare_data`
and draws with `components.compare_figures`. One colour per run (`components.colors`).
"""

from __future__ import annotations

import dataclasses
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any

import streamlit as st

from components import compare_figures, run_groups
from components.colors import run_color
from dashboard.panels import (
    compare_data,
    compare_media,
    data_panels,
    grid_axes,
    inplace_chart,
    key_panels,
    panels,
    run_sections,
    safe_text,
)
from dashboard.reading import groups, provider, run_metrics
from dashboard.reading.provider import MetricTable

CONTROLS = "compare"  # the name every comparison grid's smoothing, log y and x axis are saved under in the browser
POP_MODES = {"curves": "every run", "min-max": "mean, min-max band", "std": "mean, ±1 std band"}


def _populations(selected: list[provider.RunInfo]) -> dict[str, list[provider.RunInfo]]:
    """Populations with at least two selected members."""
    found: dict[str, list[provider.RunInfo]] = {}
    for r in selected:
        if groups.group_of(r):
            found.setdefault(groups.group_of(r), []).append(r)
    return {g: rs for g, rs in found.items() if len(rs) >= 2}


def _step_bounds(tables: Mapping[str, MetricTable]) -> tuple[int, int]:
    ranges = [r for r in (t.step_range() for t in tables.values()) if r is not None]
    return (int(min(r[0] for r in ranges)), int(max(r[1] for r in ranges))) if ranges else (0, 0)


def controls(pops: bool, bounds: tuple[int, int], group_by: str | None = None) -> dict[str, Any]:
    """The metrics some runs lack, the population view (or the groups' band) and the step range. Smoothing, log y
    and the x axis are the browser's, on each grid (static/line_grid.js with static/chart/controls.js)."""
    c = st.columns([1, 2, 3], vertical_alignment="bottom")
    out = {
        "partial": c[0].toggle("metrics not all have", value=False, key="cmp_partial"),
        "pop": "curves",
        "range": bounds,
        "group_by": group_by,
        "band": "min-max",
    }
    if group_by is not None:  # every run is in a group: no population drawn apart
        out["band"] = c[1].segmented_control(
            "Groups", list(run_groups.BANDS), format_func=lambda b: f"mean, {run_groups.BANDS[b]}", default="min-max",
            required=True, key="cmp_group_band",
        )  # fmt: skip
    elif pops:
        out["pop"] = c[1].segmented_control(
            "Populations", list(POP_MODES), format_func=POP_MODES.get, default="curves", required=True, key="cmp_pop"
        )
    if bounds[1] > bounds[0] and max(abs(bounds[0]), abs(bounds[1])) <= run_sections.MAX_SAFE_STEP:
        out["range"] = c[2].slider(
            "Step range (zoom in: the range is re-read at full resolution)",
            bounds[0],
            bounds[1],
            bounds,
            key="cmp_range",
        )
    return out


def series(run: provider.RunInfo, table: MetricTable, tag: str, opts: Mapping[str, Any]) -> Any:
    """(step, y, wall) of one run's tag within the chosen step range (grid_axes.timed)."""
    return grid_axes.timed(run.path, table, tag, "step", *opts["range"])


def draw(selected: list[provider.RunInfo], display: Mapping[str, str], group_by: str | None = None) -> None:
    """The whole compare section for the selected runs; grouped by the config field `group_by` (W&B's grouping:
    a line per group, the mean over its runs with a band, labelled with its value and count) when given."""
    labels = compare_data.labels(selected, display)
    tables = {r.run_id: run_metrics.metrics(r.path) for r in selected}
    shared, missing = compare_data.metric_sets({labels[r.run_id]: tables[r.run_id].tags() for r in selected})
    if not shared and not missing:
        st.info("The selected runs have no metrics yet.", icon=":material/info:")
        return
    pops = _populations(selected)
    opts = controls(bool(pops), _step_bounds(tables), group_by)
    if missing:
        lines = [f"{safe_text.code(t)}: not logged by {safe_text.md(', '.join(rs))}" for t, rs in missing.items()]
        shown = "shown below with a note" if opts["partial"] else "turn on 'metrics not all have' to see them"
        st.info(f"Not every selected run has these metrics ({shown}):  \n" + "  \n".join(lines), icon=":material/info:")
    tags = shared + (compare_data.sort_tags(list(missing)) if opts["partial"] else [])
    view = View(selected, labels, tables, missing, pops, opts)
    sections = key_panels.sections(tags)
    for i, (prefix, group) in enumerate(sections.items()):  # a grid per prefix (as W&B's sections), drawn while open
        if len(sections) == 1:
            grid(view, group)
            break
        open_ = len(group) <= data_panels.OPEN_MAX
        key = data_panels.widget_key("compare_section", prefix)
        box = st.expander(f"{safe_text.md(prefix)} · {len(group)}", expanded=open_, key=key, on_change="rerun")
        if box.open:
            with box:  # the first grid at once; the others when scrolled near (50 runs: 50 lines a subplot)
                grid(view, group, chart_key=f"{key}_grid", lazy=i > 0)
    compare_media.draw(selected, labels)  # histograms and images side by side, a run a column
    differs_and_parcoords(selected, labels)


@dataclasses.dataclass
class View:
    """What every grid of one comparison draws from: the runs, their labels and tables, the metrics some lack,
    the populations among them and the view's settings (`controls`)."""

    selected: list[provider.RunInfo]
    labels: Mapping[str, str]
    tables: Mapping[str, MetricTable]
    missing: Mapping[str, list[str]]
    pops: Mapping[str, list[provider.RunInfo]]
    opts: Mapping[str, Any]

    def banded(self) -> dict[str, str]:
        """Run id -> the label of its band: its group's when grouped by a config field (`run_groups`), else its
        population's (none when populations are drawn as curves)."""
        key = self.opts.get("group_by")
        if key is not None:
            configs = {r.run_id: r.flat_config for r in self.selected}
            return {rid: g.label(key) for g in run_groups.groups(configs, key) for rid in g.run_ids}
        if self.opts["pop"] == "curves":
            return {}
        return {r.run_id: f"{groups.short_id(g)} (mean of {len(rs)})" for g, rs in self.pops.items() for r in rs}


def grid(view: View, tags: list[str], chart_key: str = "compare_grid", lazy: bool = False) -> None:
    """Small multiples of `tags`: a line per run, or a band per group (or population, when asked).

    The figure's JSON is kept for every session (`_SPECS`) while its runs' columns and the view's settings
    stay the same: a fresh tab opening the same comparison sends it again instead of building it anew.
    lazy: drawn by the browser once scrolled near (panels.chart).
    """
    selected, labels, tables, pops, opts = view.selected, view.labels, view.tables, view.pops, view.opts
    banded = view.banded()
    version = _version(view, tags, chart_key)
    spec = _spec_kept(version) if panels.inplace_charts() else None
    if spec is not None:
        panels.chart(None, chart_key, lazy=lazy, spec=spec)
        return
    colors = {labels[r.run_id]: run_color(r.run_id) for r in selected}
    colors |= {f"{groups.short_id(g)} (mean of {len(rs)})": run_color(g) for g, rs in pops.items()}
    colors |= {label: run_color(label) for label in banded.values() if label not in colors}
    curves: dict[str, dict[str, Any]] = {}
    bands: dict[str, dict[str, compare_figures.Band]] = {}
    for tag in tags:
        members: dict[str, list[Any]] = {}
        for r in selected:
            if tag not in tables[r.run_id].tags():
                continue
            xyw = series(r, tables[r.run_id], tag, opts)
            if r.run_id in banded:
                members.setdefault(banded[r.run_id], []).append(xyw)
            else:
                curves.setdefault(tag, {})[labels[r.run_id]] = xyw
        for label, xyws in members.items():
            bands.setdefault(tag, {})[label] = compare_data.timed_band(xyws, _aggregate(opts))
    data = compare_figures.GridData(tags, curves, bands, view.missing)
    look = dataclasses.replace(compare_figures.GRID_LOOK, colors=colors)
    fig = compare_figures.metric_grid(data, look, browser=_browser(view, banded))
    spec = _keep_spec(version, inplace_chart.figure_spec(fig)) if panels.inplace_charts() else None
    panels.chart(fig, chart_key, lazy=lazy, spec=spec)


def _aggregate(opts: Mapping[str, Any]) -> Callable[[list[Any]], compare_figures.Band]:
    """How the view makes a band of curves: a group's mean at each of its runs' steps, or a population's."""
    if opts["group_by"] is not None:
        return lambda xys: run_groups.aggregate(xys, opts["band"])
    return lambda xys: compare_data.band(xys, "std" if opts["pop"] == "std" else "min-max")


def _browser(view: View, banded: Mapping[str, str]) -> dict[str, Any]:
    """What the browser's grid needs for its controls (grid_axes.browser): each line's runs (a band's are its
    group's), the scalar keys of every selected run for the x axis, coloured by the theme's palette."""
    lines: dict[str, list[provider.RunInfo]] = {}
    for r in view.selected:
        lines.setdefault(banded.get(r.run_id, view.labels[r.run_id]), []).append(r)
    keys = grid_axes.scalar_keys([view.tables[r.run_id] for r in view.selected])
    return grid_axes.browser(CONTROLS, lines, keys, palette=True)


SPECS_KEPT = 8  # comparison figures kept for every session (50 runs x 2 metrics: ~1 MB of JSON each)
_SPECS: OrderedDict[tuple, str] = OrderedDict()
_SPECS_LOCK = threading.Lock()


def _version(view: View, tags: list[str], chart_key: str) -> tuple:
    """What a grid's figure depends on: each run's label, table and its changes, epoch scale and population, the
    metrics and runs lacking them, and the view's settings."""
    banded, tables = view.banded(), view.tables
    runs = tuple(
        (
            r.run_id,
            view.labels[r.run_id],
            id(tables[r.run_id]),
            tables[r.run_id].changes,
            tables[r.run_id].offset,  # with the table's id and changes: a table made anew at the same address too
            compare_data.epoch_scale(r.status),
            banded.get(r.run_id),
        )
        for r in view.selected
    )
    lacking = tuple((t, tuple(view.missing.get(t, ()))) for t in tags)
    settings = tuple((k, tuple(v) if isinstance(v, (list, tuple)) else v) for k, v in sorted(view.opts.items()))
    return chart_key, runs, lacking, settings


def _spec_kept(version: tuple) -> str | None:
    with _SPECS_LOCK:
        spec = _SPECS.get(version)
        if spec is not None:
            _SPECS.move_to_end(version)
        return spec


def _keep_spec(version: tuple, spec: str) -> str:
    with _SPECS_LOCK:
        _SPECS[version] = spec
        while len(_SPECS) > SPECS_KEPT:
            _SPECS.popitem(last=False)
    return spec


PARCOORDS_AUTO_RUNS = 4  # parallel coordinates drawn without asking for up to this many runs


def differs_and_parcoords(selected: list[provider.RunInfo], labels: Mapping[str, str]) -> None:
    """The settings that differ between the selected runs, then settings against final metrics."""
    table = compare_data.differs(selected, labels)
    st.subheader("What differs", divider="gray")
    if len(selected) < 2:
        st.caption("Select two or more runs to see which settings differ.")
        return
    if table.empty:
        st.caption("Every setting is the same in the selected runs.")
    else:
        st.dataframe(table, key="cmp_differs")
    settings = [s for s in table.index if s != "population"]
    rows, metrics = compare_data.parcoords_rows(selected, settings)
    if not settings or not metrics:
        st.caption("Parallel coordinates need a setting that differs and final metrics (written when a run ends).")
        return
    st.subheader("Settings against final metrics", divider="gray")
    # Plotly draws parallel coordinates with WebGL: in a browser without graphics acceleration (e.g.
    # headless Chromium here) it blocked the page 2-6 s, so beyond a few runs it waits to be asked for.
    show = st.toggle(
        "Parallel coordinates",
        value=len(selected) <= PARCOORDS_AUTO_RUNS,
        key="cmp_pc_show",
        help="Drawn with WebGL: can take seconds in a browser without graphics acceleration.",
    )
    if not show:
        return
    color = st.selectbox("Colour by", metrics, index=len(metrics) - 1, key="cmp_pc_color")
    panels.chart(compare_figures.parallel_coordinates(rows, settings, metrics, color), "compare_parcoords")
