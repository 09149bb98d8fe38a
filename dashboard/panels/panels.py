"""Panels shared by the Live and Run detail pages: compute series, then draw them.

Each panel takes what was read from the run store (status, config, records)
and draws; nothing here writes to the run directory.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx

from components import figures
from dashboard import refresh_timings, state
from dashboard.panels import line_chart, safe_text
from dashboard.panels.inplace_chart import figure_spec, inplace_chart
from dashboard.panels.run_numbers import fmt as fmt  # used by the pages as panels.fmt
from dashboard.panels.run_numbers import progress_fraction
from dashboard.processes import launch_status, launcher
from dashboard.reading import provider, run_metrics
from dashboard.server import csv_route
from runstore import run_states
from settings.config import ConfigError, config_fields
from settings.registry import available, task_settings

log = logging.getLogger(__name__)
PLOT_CONFIG = {"displaylogo": False, "modeBarButtonsToRemove": ["lasso2d", "select2d"]}
PROBLEM_STATES = run_states.PROBLEMS


def guarded(fn: Callable[..., None]) -> Callable[..., None]:
    """Run `fn`; an unexpected error becomes one st.error line (traceback to the server log, never the page)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> None:
        try:
            fn(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - the page shows a message, the log keeps the traceback
            log.exception("dashboard error in %s", fn.__name__)
            st.error(safe_text.md(f"Something went wrong: {type(exc).__name__}: {exc}"), icon=":material/error:")

    return wrapper


def pick_run(runs: list[provider.RunInfo]) -> provider.RunInfo | None:
    """Run selector; defaults to ?run=, else the run chosen here, else the newest active run, else the newest.

    Only a run the user picks (here, by a link, or on another page) is remembered: while none is, the page
    follows the newest run, and the run watcher's rerun shows a run started after the page opened. A run
    picked stays shown when newer runs start.
    """
    current = state.select_run(runs)
    if current is None:
        return None
    by_id = {r.run_id: r for r in runs}
    key = f"pick_run_{current.run_id}"  # a new default is a new widget showing it
    chosen = st.selectbox(
        "Run",
        list(by_id),
        index=list(by_id).index(current.run_id),
        format_func=lambda i: f"{by_id[i].name}  ·  {by_id[i].task}  ·  {i}",
        key=key,
        on_change=_remember_pick,
        args=(key, current.run_id, frozenset(by_id)),
    )
    return by_id[chosen]


def _remember_pick(key: str, shown: str, listed: frozenset[str]) -> None:
    """The picker's on_change: remember the run the user picked in the widget `key`, drawn showing `shown`.

    Streamlit keeps a widget's callback after the run that replaced it (the picker's key changes with
    its default), and a rerun the browser asked for while that run ran (the run watcher's, the panel's;
    queued behind it) still carries the replaced widget's value: with no old value to compare, Streamlit
    calls this for it. That value is the run the widget showed, the previous default: remembering it would pin the
    page to an older run. Only another listed run is the user's pick.
    """
    picked = st.session_state.get(key)
    if picked != shown and picked in listed:
        state.remember_run(picked)


def key_config(task: str, c: dict[str, Any]) -> str:
    """The settings that tell runs apart, in one line: every non-advanced field ("" for an unknown config).

    Choices show as their value ("adam"), other fields as name=value; fields the task marks as
    advanced, and empty values, are left out. Without the task's metadata (it cannot be loaded
    here), every field is shown.
    """
    if not c:
        return ""
    infos = _field_infos(task)
    parts = []
    for k, v in c.items():
        info = infos.get(k)
        if v is None or (info is not None and info.advanced):
            continue
        text = f"{v:g}" if isinstance(v, float) else "x".join(map(str, v)) if isinstance(v, list) else str(v)
        parts.append(text if info is not None and info.choices else f"{k}={text}")
    return " ".join(parts)


@functools.lru_cache(maxsize=64)
def _field_infos(task: str) -> dict[str, Any]:
    """{field: FieldInfo} of a task's config, {} when the task cannot be loaded in this process."""
    for spec in (task, *available()):  # a short name of a user's task is found by loading the listed specs
        try:
            if spec == task or task_settings(spec).name == task:
                return {f.name: f for f in config_fields(spec)}
        except ConfigError:
            continue
    return {}


def inplace_charts() -> bool:
    """Whether charts are in-place components ($JAXDASH_INPLACE_CHARTS=0: st.plotly_chart, to compare)."""
    return os.environ.get("JAXDASH_INPLACE_CHARTS", "1") != "0"


def chart(fig: Any, key: str, lazy: bool = False, spec: str | None = None) -> None:
    """A plotly chart with a stable key, so a refresh updates it in place (lazy: drawn when scrolled near).

    Drawn by dashboard/panels/inplace_chart.py (plotly.js's basic bundle, loaded once per page): a page of
    charts starts ~0.75 s of browser CPU sooner than with st.plotly_chart's full-bundle chunk.
    """
    if inplace_charts():
        inplace_chart(fig, key, PLOT_CONFIG, lazy=lazy, spec=spec)
    else:
        st.plotly_chart(safe_text.without_remote_images(fig), key=key, config=PLOT_CONFIG, theme=None)


# st.plotly_chart's element id follows the figure's JSON, and the browser remounts a chart whose id
# changed: redrawn from scratch, which on a busy machine costs the page hundreds of milliseconds.
# So a live chart is rebuilt only when what it shows changed, and (as an st.plotly_chart) during
# the page's timed refreshes at most every CHART_EVERY_S; otherwise the same figure is sent again
# (same id: no remount). In-place charts (dashboard/panels/inplace_chart.py, the default) are never
# remounted, so they have no throttle.
CHART_EVERY_S = refresh_timings.seconds("chart_rebuild")
LIVE_PANEL_KEY = "live_panel"  # the container of a Live page's refreshing panel (CSS class st-key-live_panel)
RUN_HEAD_KEY = "run_head"  # badge, progress and Stop/Resume: as tall with a button as without (no jump when a run ends)
# The metric tiles' row. Streamlit loads st.metric's code when a page first shows one and holds its place
# 40 px tall meanwhile: the row is as tall as its tiles from the start, so the charts below do not jump.
TILES_KEY = "run_tiles"
# Streamlit fades an element to a third of its opacity while a rerun has not sent it again yet. The
# Live panel reruns twice a second while its run trains, on a machine the run keeps busy: the fade
# would blink its charts and numbers, which Plotly.react updates in place and are never stale by
# more than a refresh. Everything else still fades. Elements that draw nothing (refresh triggers, the run
# watcher, the chart code's warm-ups) give their share of the column's 1rem gap back, and the page starts
# a short way below the navigation bar.
LIVE_PANEL_CSS = f"""<style>
.st-key-{LIVE_PANEL_KEY} [data-stale="true"], .st-key-{LIVE_PANEL_KEY}[data-stale="true"] {{
  opacity: 1 !important; transition: none !important;
}}
.st-key-{RUN_HEAD_KEY} {{ min-height: 2.5rem; justify-content: center; }}
.st-key-{TILES_KEY} {{ min-height: 4.75rem; }}
.stElementContainer:is(.st-key-runs_watch, [class*="_trigger"], [class*="_warmup"]) {{ margin-bottom: -1rem; }}
[data-testid="stMainBlockContainer"] {{ padding-top: 5rem; }}
</style>"""


def _auto_refresh() -> bool:
    """True in a fragment's timed rerun (not a page run or a click)."""
    ctx = get_script_run_ctx()
    return bool(ctx is not None and ctx.fragment_ids_this_run)


def live_chart(
    key: str,
    version: Any,
    build: Callable[[], Any],
    lazy: bool = False,
    max_age_s: float | None = None,
) -> None:
    """Draw `build()` under `key`, calling `build` only when `version` (what the figure depends on) changed
    or, with `max_age_s`, once the figure kept is that old (0: built anew in every run).

    As an st.plotly_chart, in a timed refresh a chart that already shows data is rebuilt at most
    every CHART_EVERY_S; a chart without data is rebuilt at once, so the first point shows at once.
    lazy: as `chart`'s.
    """
    inplace = inplace_charts()
    cache = st.session_state.setdefault("_live_charts", {})
    old = cache.get(key)
    now = time.monotonic()
    due = old is None or inplace or not old[3] or not _auto_refresh() or now - old[2] >= CHART_EVERY_S
    aged = old is not None and max_age_s is not None and now - old[2] >= max_age_s
    if old is None or (old[0] != version and due) or aged:
        fig = build()
        has_data = any(getattr(t, "x", None) is not None and len(t.x) for t in fig.data)
        cache[key] = old = (version, fig, now, has_data, figure_spec(fig) if inplace else None)
    chart(old[1], key, lazy=lazy, spec=old[4])  # unchanged: the same JSON again, not serialized again


def live_line(key: str, version: Any, build: Callable[[], dict[str, Any]], lazy: bool = False) -> None:
    """Draw the line chart `build()` (a line_spec.spec) under `key`, built anew only when `version` changed:
    otherwise the same spec text goes again, which the browser does not draw again (its feed appends)."""
    cache = st.session_state.setdefault("_live_lines", {})
    old = cache.get(key)
    if old is None or old[0] != version:
        spec = build()
        cache[key] = old = (version, json.dumps(spec, allow_nan=False), spec)
    line_chart.draw(old[2], key, text=old[1], lazy=lazy)


def problem_message(status: dict[str, Any]) -> None:
    """st.error with the run's own message for failed / diverged / crashed runs (never a traceback)."""
    if status.get("state") in PROBLEM_STATES:
        st.error(safe_text.md(status.get("message") or f"The run {status['state']}."), icon=":material/error:")


def progress(status: dict[str, Any], slot: Any = None) -> None:
    """Progress bar with epoch/step, steps/s, ETA and compile time in its caption (in `slot`, an st.empty, if given)."""
    text = safe_text.md(figures.progress_text(status, now=time.time()))  # a phase and position from status.json
    (slot or st).progress(progress_fraction(status), text=text)


def csv_download(run: provider.RunInfo, where: Any = None) -> None:
    """The run's "Metrics CSV": a link to the streamed CSV route (dashboard/server_app.py) when it
    is served, else a download button whose file is built when clicked."""
    if csv_route.ROUTE_ON:
        (where or st).link_button("Metrics CSV", csv_route.path(run.run_id), icon=":material/download:")
        return
    (where or st).download_button(
        "Metrics CSV",
        run_metrics.metrics_csv(run.path),
        file_name=f"{run.run_id}.csv",
        mime="text/csv",
        icon=":material/download:",
        on_click="ignore",
    )


def resume_control(run_dir: Path, status: dict[str, Any], key: str, label: str = "Resume") -> None:
    """A Resume button for a stopped, crashed or failed run with a checkpoint; says why when a resume failed."""
    if status.get("resume_error"):
        st.warning(f"Resume failed: {safe_text.md(status['resume_error'])}", icon=":material/warning:")
    if status.get("state") not in launch_status.RESUMABLE_STATES or not launcher.has_checkpoint(run_dir):
        return
    if st.button(
        label, icon=":material/replay:", key=key, help="Continue from its latest checkpoint in a new process."
    ):
        launcher.resume(run_dir)
        st.rerun()  # the whole page: it refreshes while the run is active again
