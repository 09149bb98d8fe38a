"""Live: watch one run (or every member of its population) train, refreshed while it is active."""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import streamlit as st

from components.colors import run_color
from dashboard import refresh_timings, state
from dashboard.forms.widgets import status_badge
from dashboard.panels import (
    group_panels,
    histogram_panel,
    inplace_chart,
    key_panels,
    line_chart,
    live_numbers,
    media_panels,
    panel_kinds,
    panels,
    refresh_trigger,
    safe_text,
    tab_visibility,
    text_panel,
)
from dashboard.panels.image_steps_panel import widget_key
from dashboard.processes import launch_status, launcher
from dashboard.reading import groups, provider, run_list, run_metrics
from dashboard.reading.provider import MetricTable


@dataclass
class HeadButtons:
    """What the head's Stop and Resume act on: Stop signals `stop_dir`'s run (None: no run to stop), Resume
    continues `resume_dir`'s run (whose status is `resume_status`)."""

    stop_dir: Path | None
    stop_label: str
    resume_dir: Path
    resume_status: dict
    resume_label: str = "Resume"


def head(status: dict, active: bool, buttons: HeadButtons) -> Any:
    """Badge, progress, and Stop (while active) or Resume (stopped/crashed with a checkpoint); the progress slot."""
    stop_dir, stop_label = buttons.stop_dir, buttons.stop_label
    cols = st.container(key=panels.RUN_HEAD_KEY).columns([1, 6, 2], vertical_alignment="center")
    with cols[0]:
        status_badge(status.get("state"))
    with cols[1]:
        slot = st.empty()
        panels.progress(status, slot)
    with cols[2]:
        queued = status.get("state") == "queued"
        if active and stop_dir is not None and not provider.abilities(stop_dir).stoppable:
            st.caption(NOT_OURS_TO_STOP)  # a stop file there is read by no one
        elif active and stop_dir is not None:
            if st.button("Cancel" if queued else stop_label, icon=":material/stop:", key="stop_run", type="secondary"):
                signalled = launcher.stop(stop_dir)
                if queued:
                    st.toast("Taken out of the run queue: it will not start.", icon=":material/info:")
                elif not signalled:
                    st.toast(launcher.STOP_FILE_ONLY, icon=":material/info:")
        else:
            panels.resume_control(buttons.resume_dir, buttons.resume_status, "resume_run", buttons.resume_label)
    return slot


NOT_OURS_TO_STOP = "No Stop: a TensorBoard log's writer is not ours to stop; it ends when its writer exits."


def stopping_note(active: bool, stop_dir: Path | None) -> None:
    """A line while a stop was asked for and the run finishes its chunk (inside the messages container)."""
    if active and stop_dir is not None and provider.stop_requested(stop_dir):
        st.caption("Stopping after the current chunk…")


# One run's curves append its new records in the browser (dashboard/server/rows_route.py) and its
# progress line and tiles follow it (dashboard/panels/live_numbers.py): the panel reruns at once for a
# new state, phase or tile, and for anything else (new media, the charts downsampled anew) this often:
# at 10 s these reruns cost Chromium ~0.9 s of CPU a minute (`benchmarks/page_probe.py live`:
# 3.6 and 3.1 s/min at 10 s, 2.9 and 2.8 at 20 s), on the machine the run trains on.
FED_RERUN_MS = refresh_timings.ms("live_fed_rerun")
FIRST_POINT_WAIT_S = refresh_timings.seconds("first_point_wait")
FIRST_POINT_POLL_S = refresh_timings.seconds("first_point_poll")


def first_records(run_dir: Path, status: dict, progress_slot: Any) -> MetricTable:
    """A starting run's metrics, once its first record is written (or it ended, or FIRST_POINT_WAIT_S passed).

    Refreshes come every LIVE_REFRESH_S, with gaps between them: a first record written in a gap
    would wait for the next refresh. So a refresh that finds none draws the run's head and then
    looks for it every 30 ms (a file size check; the status every 0.1 s) before drawing the charts: the first
    point shows within ~0.1 s of being written. A new phase ("compiling…") is drawn meanwhile.
    """
    deadline = time.monotonic() + FIRST_POINT_WAIT_S
    records, polls = run_metrics.metrics(run_dir), 0
    while not len(records) and time.monotonic() < deadline:
        time.sleep(FIRST_POINT_POLL_S)
        records, polls = run_metrics.metrics(run_dir), polls + 1
        if polls % 3:
            continue  # the status every ~0.1 s
        now = launch_status.run_status(run_dir)
        if not run_list.is_active(now):  # failed or stopped before its first point: draw that now
            break
        if (now.get("state"), now.get("phase")) != (status.get("state"), status.get("phase")):
            panels.progress(now, progress_slot)
            status = now
    return records


def live_panel(members: list[provider.RunInfo], selected: str, polled_ids: list[str] | None = None) -> None:
    """Everything that changes while a run or its population trains: read incrementally, then drawn.

    One path for one run and K members (a run is a population of one, as in the engine); only the
    charts differ: one run's train and test curves in its colour, or every member's curve overlaid.
    A run that ends here is drawn ended (no Stop); the page's run watcher (runs_watch.watch_runs) then
    reruns the whole page without the refresh timer. polled_ids: the panel reruns when these runs
    changed (refresh_trigger), not on a timer; one run's curves, progress line and tiles then follow
    its records themselves and the panel reruns for records at most every FED_RERUN_MS.
    """
    single = len(members) == 1
    fed = bool(polled_ids) and single  # its curves append new records themselves (rows_route)
    # Placed even with nothing to poll: the panel below keeps its place when its run ends (no jump).
    stream_gap = FED_RERUN_MS if fed else None
    refresh_trigger.rerun_on_change(polled_ids or [], stream_gap_ms=stream_gap, on=bool(polled_ids))
    sel = next(i for i, m in enumerate(members) if m.run_id == selected)
    run_dir = members[sel].path
    info = provider.launch_info(run_dir) if single else {}
    if info.get("population") and not provider.has_config(run_dir):
        first = launch_status.launched_population(run_dir.name, run_list.all_runs())
        if first is not None:  # the population's members exist now: show them
            state.remember_run(first.run_id)
            st.rerun(scope="app")
    statuses = [launch_status.run_status(m.path) for m in members]
    records = [run_metrics.metrics(m.path) for m in members]
    names = [members[0].name] if single else groups.labels(members)
    active = any(run_list.is_active(s) for s in statuses)
    live = next((m.path for m, s in zip(members, statuses, strict=True) if run_list.is_active(s)), None)
    if single:
        progress_slot = head(statuses[0], active, HeadButtons(run_dir, "Stop", run_dir, statuses[0]))
    else:
        shown = {**statuses[sel], "state": groups.group_state(statuses)}
        buttons = HeadButtons(live, "Stop all", run_dir, statuses[sel], f"Resume {names[sel]}")
        progress_slot = head(shown, active, buttons)
        counts = Counter(s.get("state", "?") for s in statuses)
        st.caption(safe_text.md(" · ".join(f"{n} {k}" for k, n in counts.items())))
    # Messages come and go; one container that is always there keeps the charts below at the same
    # place in the page, so a refresh updates them in place instead of mounting them anew (a blink).
    with st.container():
        stopping_note(active, live)
        if statuses[0].get("state") == "starting" and single:
            what = f"a population of {info['members']} runs" if info.get("population") else "the training process"
            doing = (
                "resuming from the latest checkpoint" if statuses[0].get("resuming") else "importing JAX, loading data"
            )
            st.info(safe_text.md(f"Starting {what} ({doing})…"), icon=":material/hourglass_top:")
        if statuses[0].get("state") == "queued" and single:
            st.info(queued_text(statuses[0]), icon=":material/schedule:")
        problems(names, statuses)
    if single and active and statuses[0].get("state") != "queued" and not len(records[0]):
        records[0] = first_records(run_dir, statuses[0], progress_slot)  # the head is already on its way
    kinds = provider.run_panels(members[0].path, info if single else None, records[0].tags())  # config.json "panels"
    if single:
        panel_kinds.metric_tiles(records[0], statuses[0])
        abilities = provider.abilities(run_dir)
        every_key = abilities.keys_by_prefix  # a user's loop
        keys = len(records[0].tags()) if every_key else None
        live_numbers.follow(run_dir.name, on=fed and active, keys=keys)  # the progress line and tiles between reruns
        color = run_color(run_dir.name)
        rk = widget_key("", run_dir.name)  # a run id is data: keys hold its digest, never the id
        chart = panel_kinds.ChartRun(records[0], run_dir.name, color, fed and active)
        panel_kinds.draw(run_dir, kinds, chart, statuses[0], f"live{rk}")
        if every_key:  # every scalar, histogram and text key in its prefix's section
            drawn = panel_kinds.drawn_kinds(run_dir, kinds, records[0])
            key_panels.draw(chart, f"live_keys{rk}", drawn, run_dir)
        media_panels.media_section(run_dir, records[0], f"live_media{rk}")  # its own figures, images, tables
        # A TensorBoard log's histograms and texts (a user's loop: in its key sections). Our tasks' parameter
        # histograms stay on Run detail: twelve more charts on Live for every epoch's snapshot of the weights.
        if abilities.charts_per_tag:
            histogram_panel.section(run_dir, f"live_hist{rk}")
            text_panel.section(run_dir)
        return
    key = members[0].status.get("group", "group")
    seeds_vary = "seed" in groups.varied([m.config for m in members])
    empty = panel_kinds.waiting_text(statuses[sel])
    population = group_panels.Population(members, statuses, records, names)
    group_panels.draw(population, kinds, f"group_{key}", seeds_vary, empty)


def queued_text(status: dict[str, Any]) -> str:
    """What a run waiting in the run queue shows: its place, and what it waits for."""
    return (
        f"Queued: #{safe_text.md(status.get('position', '?'))} in the run queue. It starts when a training process ends "
        "(the limit is on the Sweeps page); Cancel takes it out of the queue."
    )


def problems(names: list[str], statuses: list[dict[str, Any]]) -> None:
    """Failed, diverged or crashed members: one message when all share it (e.g. no dataset), else one each."""
    bad = [(n, s) for n, s in zip(names, statuses, strict=True) if s.get("state") in panels.PROBLEM_STATES]
    if len(bad) == len(statuses) and len({s.get("message") for _, s in bad}) == 1:
        panels.problem_message(bad[0][1])
        return
    for n, s in bad:
        st.error(safe_text.md(f"{n}: {s.get('message') or 'the run ' + s['state'] + '.'}"), icon=":material/error:")


def page() -> None:
    """Run picker, then the live panel of the run or its population (auto-refreshing only while active)."""
    inplace_chart.warm_up()  # first: plotly.js loads while the server runs the rest of the page
    line_chart.warm_up()  # and the line charts' uPlot and chart files
    st.title("Live")
    runs = run_list.all_runs()
    run = panels.pick_run(runs)
    if run is None:
        st.info("No runs yet.", icon=":material/info:")
        st.page_link("views/launch.py", label="Start one", icon=":material/rocket_launch:")
        return
    if run.damaged:
        message = safe_text.md(f"This run's files are damaged: {run.status.get('message')}")
        st.error(message, icon=":material/broken_image:")
        st.caption("Nothing to watch. Run detail lists the folder; Runs & compare can delete it.")
        return
    group = groups.group_of(run)
    members = groups.members(runs, group) if group else [run]
    if group:
        fields = groups.varied([m.config for m in members])
        varying = safe_text.md(", ".join(fields) or "nothing")
        st.caption(f"Population {safe_text.code(group)} · {len(members)} members · varying {varying}")
    else:
        st.caption(safe_text.md(" · ".join(x for x in (run.task, panels.key_config(run.task, run.flat_config)) if x)))
    active = any(run_list.is_active(m.status) for m in members)
    visible = tab_visibility.tab_visible()  # placed whether or not the run is active: the panel never moves
    followed = members if active and visible else []  # hidden tab: no refresh
    refresh, polled_ids = refresh_trigger.follow(followed, state.LIVE_REFRESH_S)
    with st.container(key=panels.LIVE_PANEL_KEY):
        st.fragment(panels.guarded(live_panel), run_every=refresh)(members, run.run_id, polled_ids)


page()
