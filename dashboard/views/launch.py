"""New run: pick a task, fill its form, start a training process."""

from __future__ import annotations

import streamlit as st

from components.widgets import config_form
from dashboard import launcher, state
from training.config import ConfigError, parse_config

TASKS = {"regression": "Linear regression", "mnist": "MNIST / Fashion-MNIST"}


def start(task: str, raw: dict, name: str, wandb_mode: str) -> str | None:
    """Validate and launch; returns the run id, or None with the errors kept for the form."""
    try:
        cfg = parse_config(task, raw)
    except ConfigError as exc:
        st.session_state[f"errors_{task}"] = exc.errors
        return None
    st.session_state.pop(f"errors_{task}", None)
    return launcher.launch(cfg, name=name or None, wandb_mode=wandb_mode).name


def active_runs() -> None:
    """Links to the runs that are training now (from any tab, the CLI included)."""
    active = [r for r in state.list_runs() if state.is_active(r.status)]
    if active:
        st.caption(f"Training now ({len(active)}):")
        for r in active:
            st.page_link(
                "views/live.py",
                label=f"{r.name} · {r.task}",
                icon=":material/monitoring:",
                query_params={"run": r.run_id},
            )


def page() -> None:
    """Draw the task picker and the form of the chosen task."""
    st.title("New run")
    st.caption(f"Each run is its own process writing to `{state.runs_root()}`; it keeps going if you close the page.")
    task = st.segmented_control(
        "Task", list(TASKS), format_func=TASKS.get, default="regression", required=True, key="task"
    )
    errors = st.session_state.get(f"errors_{task}", {})
    values = config_form(task, errors)
    active_runs()
    if not values.submitted:
        return
    try:
        run_id = start(task, values.raw, values.name, values.wandb_mode)
    except (OSError, ValueError, RuntimeError) as exc:
        st.error(f"Could not start the run: {exc}")
        return
    if run_id is None:
        st.rerun()  # redraw the form with each message under its field
    state.remember_run(run_id)
    st.switch_page("views/live.py", query_params={"run": run_id})


page()
