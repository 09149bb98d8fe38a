"""Live: watch one run (or every member of its population) train, refreshed while it is active."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import streamlit as st

from components.colors import run_color
from components.widgets import status_badge
from dashboard import (
    artifacts,
    group_panels,
    groups,
    inplace_chart,
    launcher,
    media_panels,
    panel_kinds,
    panels,
    state,
)
from dashboard.metric_table import MetricTable
from training import run_store


def head(
    status: dict,
    active: bool,
    stop_dir: Path | None,
    resume_dir: Path,
    resume_status: dict,
    stop_label: str,
    resume_label: str = "Resume",
) -> Any:
    """Badge, progress, and Stop (while active) or Resume (stopped/crashed with a checkpoint); the progress slot."""
    cols = st.columns([1, 6, 2], vertical_alignment="center")
    with cols[0]:
        status_badge(status.get("state"))
    with cols[1]:
        slot = st.empty()
        panels.progress(status, slot)
    with cols[2]:
        if active and stop_dir is not None:
            if st.button(stop_label, icon=":material/stop:", key="stop_run", type="secondary"):
                if not launcher.stop(stop_dir):
                    st.toast(launcher.STOP_FILE_ONLY, icon=":material/info:")
        else:
            panels.resume_control(resume_dir, resume_status, "resume_run", resume_label)
    return slot


def stopping_note(active: bool, stop_dir: Path | None) -> None:
    """A line while a stop was asked for and the run finishes its chunk (inside the messages container)."""
    if active and stop_dir is not None and run_store.stop_requested(stop_dir):
        st.caption("Stopping after the current chunk…")


FIRST_POINT_WAIT_S = 1.5  # at most, in one refresh (then the timed refreshes go on)
FIRST_POINT_POLL_S = 0.03


def first_records(run_dir: Path, status: dict, progress_slot: Any) -> MetricTable:
    """A starting run's metrics, once its first record is written (or it ended, or FIRST_POINT_WAIT_S passed).

    Refreshes come every LIVE_REFRESH_S, with gaps between them: a first record written in a gap
    would wait for the next refresh. So a refresh that finds none draws the run's head and then
    looks for it every 30 ms (a file size check; the status every 0.1 s) before drawing the charts: the first
    point shows within ~0.1 s of being written. A new phase ("compiling…") is drawn meanwhile.
    """
    deadline = time.monotonic() + FIRST_POINT_WAIT_S
    records, polls = state.poll_metrics(run_dir), 0
    while not len(records) and time.monotonic() < deadline:
        time.sleep(FIRST_POINT_POLL_S)
        records, polls = state.poll_metrics(run_dir), polls + 1
        if polls % 3:
            continue  # the status every ~0.1 s
        now = state.run_status(run_dir)
        if not state.is_active(now):  # failed or stopped before its first point: draw that now
            break
        if (now.get("state"), now.get("phase")) != (status.get("state"), status.get("phase")):
            panels.progress(now, progress_slot)
            status = now
    return records


def live_panel(run_dir: Path, task: str) -> None:
    """Everything that changes while a run trains: read incrementally, then drawn.

    A run that ends here is drawn ended (no Stop); the page's run watcher (state.watch_runs) then
    reruns the whole page without the refresh timer.
    """
    status = state.run_status(run_dir)
    info = launcher.launch_info(run_dir)
    if info.get("population") and not (run_dir / "config.json").exists():
        first = state.launched_population(run_dir.name, state.list_runs())
        if first is not None:  # the population's members exist now: show them
            state.remember_run(first.run_id)
            st.rerun(scope="app")
    records = state.poll_metrics(run_dir)
    active = state.is_active(status)
    progress_slot = head(status, active, run_dir, run_dir, status, "Stop")
    # Messages come and go; one container that is always there keeps the charts below at the same
    # place in the page, so a refresh updates them in place instead of mounting them anew (a blink).
    with st.container():
        stopping_note(active, run_dir)
        if status.get("state") == "starting":
            what = f"a population of {info['members']} runs" if info.get("population") else "the training process"
            doing = "resuming from the latest checkpoint" if status.get("resuming") else "importing JAX, loading data"
            st.info(f"Starting {what} ({doing})…", icon=":material/hourglass_top:")
        panels.problem_message(status)
    if active and not len(records):
        records = first_records(run_dir, status, progress_slot)  # the head above is already on its way to the browser
    kinds = artifacts.run_panels(run_dir, info, records.tags())  # config.json "panels": what the task asks for
    panel_kinds.metric_tiles(records, status)
    panel_kinds.draw(run_dir, kinds, records, status, f"live_{run_dir.name}", run_color(run_dir.name))
    media_panels.media_section(run_dir, records, f"live_media_{run_dir.name}")  # the run's own figures, images, tables


def group_panel(members: list[run_store.RunInfo], selected: str) -> None:
    """Every member of a population: K fitted lines, K loss and accuracy curves, one row each."""
    statuses = [state.run_status(m.path) for m in members]
    records = [state.poll_metrics(m.path) for m in members]
    names = groups.labels(members)
    active = any(state.is_active(s) for s in statuses)
    sel = next(i for i, m in enumerate(members) if m.run_id == selected)
    live = next((m.path for m, s in zip(members, statuses, strict=True) if state.is_active(s)), None)
    head(
        {**statuses[sel], "state": groups.group_state(statuses)},
        active,
        live,
        members[sel].path,
        statuses[sel],
        "Stop all",
        f"Resume {names[sel]}",
    )
    counts: dict[str, int] = {}
    for s in statuses:
        counts[s.get("state", "?")] = counts.get(s.get("state", "?"), 0) + 1
    st.caption(" · ".join(f"{n} {k}" for k, n in counts.items()))
    bad = [(n, s) for n, s in zip(names, statuses, strict=True) if s.get("state") in panels.PROBLEM_STATES]
    with st.container():  # always there: messages that come and go never move the charts below
        stopping_note(active, live)
        if len(bad) == len(members) and len({s.get("message") for _, s in bad}) == 1:
            panels.problem_message(bad[0][1])  # one failure for all (e.g. no dataset): say it once
        else:
            for n, s in bad:
                st.error(f"{n}: {s.get('message') or 'the run ' + s['state'] + '.'}", icon=":material/error:")
    key = members[0].status.get("group", "group")
    kinds = artifacts.run_panels(members[0].path, None, records[0].tags())
    seeds_vary = "seed" in groups.varied([m.config for m in members])
    empty = panel_kinds.waiting_text(statuses[sel])
    group_panels.draw(members, statuses, records, names, kinds, f"group_{key}", seeds_vary, empty)


def page() -> None:
    """Run picker, then the live panel of the run or its population (auto-refreshing only while active)."""
    inplace_chart.warm_up()  # first: plotly.js loads while the server runs the rest of the page
    st.title("Live")
    runs = state.list_runs()
    run = panels.pick_run(runs)
    if run is None:
        st.info("No runs yet.", icon=":material/info:")
        st.page_link("views/launch.py", label="Start one", icon=":material/rocket_launch:")
        return
    if run.damaged:
        st.error(f"This run's files are damaged: {run.status.get('message')}", icon=":material/broken_image:")
        st.caption("Nothing to watch. Run detail lists the folder; Runs & compare can delete it.")
        return
    group = groups.group_of(run)
    if group:
        members = groups.members(runs, group)
        fields = groups.varied([m.config for m in members])
        st.caption(f"Population `{group}` · {len(members)} members · varying {', '.join(fields) or 'nothing'}")
        active = any(state.is_active(m.status) for m in members)
        interval = state.LIVE_REFRESH_S if active else None
        with st.container(key=panels.LIVE_PANEL_KEY):
            st.fragment(panels.guarded(group_panel), run_every=interval)(members, run.run_id)
        return
    st.caption(" · ".join(x for x in (run.task, panels.key_config(run.task, run.config)) if x))
    active = state.is_active(run.status)
    interval = state.LIVE_REFRESH_S if active else None
    with st.container(key=panels.LIVE_PANEL_KEY):
        st.fragment(panels.guarded(live_panel), run_every=interval)(run.path, run.task)


page()
