"""Run detail sections: what the user wrote about the run, every metric (system ones too) with a
full-resolution zoom, the run's own process output, and a client script's console (its Logs)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import streamlit as st

from components import compare_figures
from components.colors import run_color
from dashboard import refresh_timings
from dashboard.panels import compare_data, grid_axes, line_spec, safe_text
from dashboard.panels.panels import live_chart
from dashboard.reading import provider
from dashboard.reading.provider import MetricTable
from runstore import tags

LOG_LINES = 200
# While the run trains, its grids (below its own fed panels) are built anew at most this often, as
# TensorBoard reloads every 30 s: at every 10-20 s rerun, two grids of 3-8 subplots each cost Run detail
# Plotly.react work on the machine the run trains on. A zoom, a new metric or the run's end redraws at once.
GRID_REFRESH_S = refresh_timings.seconds("grid_rebuild")
# More metrics than this are not put in one grid (one figure of hundreds of subplots is slow to build and to
# draw): each has its own panel under "Logged keys" (data_panels), in sections drawn when opened.
GRID_MAX = 48
CONTROLS = "detail"  # the name Run detail's grids save their smoothing, log y and x axis under in the browser
ONE_LINE = {"showlegend": False}  # a grid of one run's lines needs no legend


def notes_header(run: provider.RunInfo) -> None:
    """Display name, tags and notes (edited on Runs & compare), when there are any."""
    n = provider.notes(run.path)
    if n.display_name:
        st.subheader(safe_text.md(n.display_name))
    if n.tags:
        st.markdown(" ".join(f":blue-badge[{safe_text.md(t)}]" for t in n.tags))
    if n.notes:
        st.caption(safe_text.md(n.notes))


MAX_SAFE_STEP = 2**53 - 1  # the largest integer a browser's numbers hold exactly (Streamlit refuses more)


def zoom(records: MetricTable, key: str) -> tuple[float, float] | None:
    """A step-range slider over the run; None when the run has fewer than two steps."""
    full = records.step_range()
    if full is None or full[1] <= full[0]:
        return full
    if max(abs(full[0]), abs(full[1])) > MAX_SAFE_STEP:
        st.caption(f"Steps up to {full[1]:.3g}: beyond what the page can zoom into (2^53); showing the whole range.")
        return full
    lo, hi = int(full[0]), int(full[1])
    return st.slider(
        "Step range (zoom in: the range is re-read at full resolution)", lo, hi, (lo, hi), key=f"{key}_range"
    )


def metric_grids(run: provider.RunInfo, records: MetricTable, key: str, active: bool = False) -> None:
    """Every metric of the run as small multiples, system metrics (sys/*) in a grid of their own.

    active: the run trains; its grids are then built anew every GRID_REFRESH_S (or on a zoom or new metric).
    """
    all_tags = compare_data.sort_tags(records.tags())
    if not all_tags:
        return
    st.subheader("All metrics", divider="gray")
    window = zoom(records, key)
    if window is None:
        return
    label = run.name
    look = dataclasses.replace(compare_figures.GRID_LOOK, colors={label: run_color(run.run_id)})
    system = [t for t in all_tags if t.startswith(f"{tags.SYS}/")]
    full = records.step_range()
    zoomed = tuple(window) if (int(full[0]), int(full[1])) != tuple(int(w) for w in window) else None
    for title, group in (("metrics", [t for t in all_tags if t not in system]), ("system", system)):
        if not group:
            continue
        if len(group) > GRID_MAX:
            st.caption(f"{len(group)} {title}: too many for one grid; each has its own panel under Logged keys.")
            continue

        def build(group: list[str] = group, title: str = title) -> Any:
            curves = {t: {label: grid_axes.timed(run.path, records, t, "step", *window)} for t in group}
            frame = dataclasses.replace(compare_figures.GRID_FRAME, uirevision=f"{key}_{title}", layout=ONE_LINE)
            return compare_figures.metric_grid(
                compare_figures.GridData(group, curves), look, frame, browser=grid_browser(run, records)
            )

        if title == "system":
            st.caption(
                "System: the run's process: its CPU (100 = one core), resident memory, accelerator memory "
                "(where JAX reports it) and, for a script's run, its threads."
            )
        grid_key = f"{key}_{title}"
        # below the run's own panels: drawn when scrolled near
        live_chart(grid_key, (tuple(group), zoomed), build, lazy=True, max_age_s=GRID_REFRESH_S if active else 0.0)
    if not system:
        st.caption("No system metrics (sys/*) in this run: runs from before they were logged have none.")


def grid_browser(run: provider.RunInfo, records: MetricTable, x: str = "step") -> dict[str, Any]:
    """The run's grids' controls (grid_axes.browser), saved under CONTROLS: x = a grid's own step axis, wall or
    relative time, epoch or any of the run's scalar keys. A grid against another x key (define_metric's
    step_metric) offers its own axis and the times only (an epoch or a key's value is found by step)."""
    step = x == "step"
    more = grid_axes.browser(CONTROLS, {run.name: [run]}, line_spec.xkeys(records) if step else [])
    return more if step else {**more, "epoch": {}}


def process_output(run_dir: Path, active: bool) -> None:
    """The tail of process.log: the run's own output, refreshed with the page while it runs."""
    if not provider.has_process_output(run_dir) and not provider.own_task(run_dir):
        return  # a client script's or TensorBoard log's run: its output is not ours to show
    # Read and drawn only while open: st.code makes a fresh tab load a 1.5 MB syntax highlighter.
    box = st.expander(
        "Process output (process.log)",
        icon=":material/terminal:",
        expanded=active,
        key="process_output",
        on_change="rerun",
    )
    if not box.open:
        return
    text = provider.process_output(run_dir, LOG_LINES)
    with box:
        if text is None:
            st.caption("No process.log: this run was started from the command line, so its output went there.")
        elif not text.strip():
            st.caption("The process has written no output yet.")
        else:
            st.code(text, language=None, height=320 if text.count("\n") > 15 else "content")
            st.caption(f"Last {LOG_LINES} lines{' · refreshing while the run is active' if active else ''}.")


def console_output(run_dir: Path, active: bool, failed: bool = False) -> None:
    """A client script's Logs: the tail of its stdout and stderr (output.log), as plain text, followed with the
    page's reruns while the run is active; open while it runs and when it failed (its traceback is there)."""
    if not provider.has_console_output(run_dir):
        return
    box = st.expander(
        "Logs (the script's stdout and stderr)",
        icon=":material/terminal:",
        expanded=active or failed,
        key="console_output",
        on_change="rerun",
    )
    if not box.open:
        return
    text = provider.console_output(run_dir, LOG_LINES)
    with box:
        if not (text or "").strip():
            st.caption("The script has written no output yet.")
        else:
            st.code(text, language=None, height=320 if text.count("\n") > 15 else "content")  # text, never markdown
            st.caption(f"Last {LOG_LINES} lines of output.log{' · following the run' if active else ''}.")
