"""New run: pick a task, fill its form (optionally as a population), start a training process."""

from __future__ import annotations

import streamlit as st

from components.widgets import config_form, dataset_title, field_error, population_input
from dashboard import groups, launcher, state
from training import data
from training.config import DATASET_SIZES, ConfigError, parse_config

TASKS = {"regression": "Linear regression", "mnist": "MNIST / Fashion-MNIST"}
POPULATION_FIELDS = {"lr": "Learning rates", "seed": "Seeds"}


def dataset_note(name: str, data_dir: str | None) -> str:
    """Where a run would get dataset `name`: the local folder it uses, or a download (which needs internet)."""
    # training.data's own search order (no JAX in that module); see its docstring.
    found = data.find_local(name, data_dir or None)
    if found is not None:
        return f"{dataset_title(name)}: found in `{found}`"
    target = data.download_target(name, data_dir or None)
    return f"{dataset_title(name)}: not found locally, will be downloaded to `{target}` on first run (needs internet)"


def start(task: str, raw: dict, name: str, wandb_mode: str, population: dict[str, str] | None) -> str | None:
    """Validate and launch; returns the run id (a population's launch id), or None with the errors kept for the form."""
    try:
        if population is None:
            cfg, axes = parse_config(task, raw), None
        else:
            axes, cfg = groups.parse_population(task, raw, population)
    except ConfigError as exc:
        st.session_state[f"errors_{task}"] = exc.errors
        return None
    st.session_state.pop(f"errors_{task}", None)
    if axes is None:
        return launcher.launch(cfg, name=name or None, wandb_mode=wandb_mode).name
    return launcher.launch_population(cfg, axes, name=name or None, wandb_mode=wandb_mode).name


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
    """Draw the task picker, the population lists and the form of the chosen task."""
    st.title("New run")
    st.caption(f"Each run is its own process writing to `{state.runs_root()}`; it keeps going if you close the page.")
    task = st.segmented_control(
        "Task", list(TASKS), format_func=TASKS.get, default="regression", required=True, key="task"
    )
    errors = dict(st.session_state.get(f"errors_{task}", {}))
    population_error = errors.pop("population", None)
    population = population_input(task, POPULATION_FIELDS)
    label = "Start run"
    if population is not None:
        k = groups.population_size(population)
        sizes = [
            f"{len(groups.split_list(v))} {POPULATION_FIELDS[f].lower()}" for f, v in population.items() if v.strip()
        ]
        if k > 1:
            st.caption(f"**K = {k} runs** ({' × '.join(sizes)}), trained together in one process.")
            label = f"Start population ({k} runs)"
        else:
            st.caption("K = 1: list at least two values (comma-separated).")
        if population_error:
            field_error("population", population_error)
    notes = None
    if task == "mnist":
        data_dir = st.session_state.get("mnist_data_dir") or None
        notes = {"dataset": "  \n".join(dataset_note(d, data_dir) for d in DATASET_SIZES)}
    disabled = [f for f, v in (population or {}).items() if v.strip()]
    values = config_form(task, errors, disabled=disabled, notes=notes, submit_label=label)
    active_runs()
    if not values.submitted:
        return
    try:
        run_id = start(task, values.raw, values.name, values.wandb_mode, population)
    except (OSError, ValueError, RuntimeError) as exc:
        st.error(f"Could not start the run: {exc}")
        return
    if run_id is None:
        st.rerun()  # redraw the form with each message under its field
    state.remember_run(run_id)
    st.switch_page("views/live.py", query_params={"run": run_id})


page()
