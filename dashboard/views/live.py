"""Live: watch one run train, refreshed by a fragment while it is active."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from components.widgets import status_badge
from dashboard import launcher, panels, state
from training import run_store


def live_panel(run_dir: Path, task: str, was_active: bool) -> None:
    """Everything that changes while a run trains: read incrementally, then drawn."""
    status = state.run_status(run_dir)
    records = state.poll_metrics(run_dir)
    cfg = (run_store.read_json(run_dir / "config.json") or {}).get("config", {})
    active = state.is_active(status)
    head = st.columns([1, 6, 1], vertical_alignment="center")
    with head[0]:
        status_badge(status.get("state"))
    with head[1]:
        panels.progress(status)
    with head[2]:
        if active and st.button("Stop", icon=":material/stop:", key="stop_run", type="secondary"):
            launcher.stop(run_dir)
    if active and run_store.stop_requested(run_dir):
        st.caption("Stopping after the current chunk…")
    if status.get("state") == "starting":
        st.info("Starting the training process (importing JAX, loading data)…", icon=":material/hourglass_top:")
    panels.problem_message(status)
    key = run_dir.name
    if task == "regression":
        left, right = st.columns([3, 2])
        with left:
            w, b = panels.regression_fit(run_dir, records, f"live_fit_{key}")
        with right:
            panels.regression_metrics(records, cfg, w, b)
            panels.loss_chart(records, f"live_loss_{key}")
    else:
        panels.mnist_metrics(records, status)
        left, right = st.columns(2)
        with left:
            panels.loss_chart(records, f"live_loss_{key}")
        with right:
            panels.accuracy_chart(records, f"live_acc_{key}")
    if was_active and not active:
        st.rerun()  # full rerun: redraw the page without the refresh timer


def page() -> None:
    """Run picker, then the live panel (auto-refreshing only while the run is active)."""
    st.title("Live")
    runs = state.list_runs()
    run = panels.pick_run(runs)
    if run is None:
        st.info("No runs yet.", icon=":material/info:")
        st.page_link("views/launch.py", label="Start one", icon=":material/rocket_launch:")
        return
    st.caption(" · ".join(x for x in (run.task, panels.key_config(run.task, run.config)) if x))
    active = state.is_active(run.status)
    interval = state.LIVE_REFRESH_S if active else None
    st.fragment(panels.guarded(live_panel), run_every=interval)(run.path, run.task, active)


page()
