"""Run detail's "All metrics" for a run with W&B metric definitions (`define_metric`, config.json):
a metric with a step_metric is charted against it (one grid per x key), a hidden metric not at all.

A run without definitions gets run_sections.metric_grids unchanged. Curves come from the run's records
(the same zoom slider, full resolution inside a zoomed range); figures from components/compare_figures.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import streamlit as st

from components import compare_figures
from components.colors import run_color
from dashboard.panels import compare_data, grid_axes, run_sections, safe_text
from dashboard.panels.image_steps_panel import widget_key
from dashboard.panels.panels import live_chart
from dashboard.reading import provider
from dashboard.reading.provider import MetricTable
from runstore import tags


def visible(defs: Mapping[str, Mapping[str, Any]], names: list[str]) -> list[str]:
    """`names` without the ones a definition hides."""
    return [n for n in names if not provider.hidden(defs, n)]


def metric_grids(
    run: provider.RunInfo, records: MetricTable, key: str, defs: Mapping[str, Mapping[str, Any]], active: bool
) -> None:
    """Every metric the definitions do not hide, against its step_metric (else the step); system metrics apart."""
    if not defs:
        run_sections.metric_grids(run, records, key, active)
        return
    all_tags = compare_data.sort_tags(records.tags())
    system = [t for t in all_tags if t.startswith(f"{tags.SYS}/")]
    grids = [(x, x, group) for x, group in provider.chart_axes(defs, [t for t in all_tags if t not in system]).items()]
    if visible(defs, system):
        grids.append(("system", provider.STEP, visible(defs, system)))
    if not grids:
        return
    st.subheader("All metrics", divider="gray")
    window = run_sections.zoom(records, key)
    if window is None:
        return
    look = dataclasses.replace(compare_figures.GRID_LOOK, colors={run.name: run_color(run.run_id)})
    for title, x, group in grids:
        if len(group) > run_sections.GRID_MAX:
            st.caption(f"{len(group)} {title}: too many for one grid; each has its own panel under Logged keys.")
            continue
        if title == "system":
            st.caption("System: the training process's CPU (100 = one core), resident memory and accelerator memory.")
        elif x != provider.STEP:
            st.caption(f"Against {safe_text.md(x)} (define_metric step_metric): {len(group)} metric(s).")

        def build(group: list[str] = group, x: str = x, title: str = title) -> Any:
            curves = {t: {run.name: grid_axes.timed(run.path, records, t, x, *window)} for t in group}
            browser = run_sections.grid_browser(run, records, x)
            frame = dataclasses.replace(
                compare_figures.GRID_FRAME, x_title=x, uirevision=f"{key}_{title}_{x}", layout=run_sections.ONE_LINE
            )
            return compare_figures.metric_grid(compare_figures.GridData(group, curves), look, frame, browser=browser)

        stale = run_sections.GRID_REFRESH_S if active else 0.0
        live_chart(widget_key(key, f"{title} {x}"), (tuple(group), tuple(window)), build, lazy=True, max_age_s=stale)
