"""New run: pick a task, fill the form its config metadata generates (optionally a population), start it."""

from __future__ import annotations

from typing import Any

import streamlit as st

from dashboard import refresh_timings, state
from dashboard.forms import pbt_settings, population_form
from dashboard.forms.widgets import FieldOverrides, config_form, dataset_title, field_error, population_input
from dashboard.panels import inplace_chart, line_chart, pbt_panels, safe_text
from dashboard.processes import launcher
from dashboard.reading import provider, run_list
from settings import datasets
from settings.config import ConfigError, FieldInfo, config_fields, parse_config
from settings.population import VARIED
from settings.registry import available, task_settings


def task_title(task: str) -> str:
    """The task's own title for the picker (its name or spec when it has none, or cannot be loaded)."""
    try:
        settings = task_settings(task)
    except ConfigError:
        return task
    return settings.title or settings.name or task


def form_prefix(task: str) -> str:
    """What keys the task's widgets: its short name (e.g. "mnist"), else its spec."""
    try:
        return task_settings(task).name or task
    except ConfigError:
        return task


def dataset_note(name: str, data_dir: str | None) -> str:
    """Where a run would get dataset `name`: the local folder it uses, or a download (which needs internet)."""
    # the search order training uses too (settings.datasets: no JAX); see its docstring.
    found = datasets.find_local(name, data_dir or None)
    if found is not None:
        return f"{dataset_title(name)}: found in `{found}`"
    target = datasets.download_target(name, data_dir or None)
    return f"{dataset_title(name)}: not found locally, will be downloaded to `{target}` on first run (needs internet)"


def dataset_fields(infos: list[FieldInfo], prefix: str) -> tuple[dict[str, str], dict[str, Any]]:
    """Notes and defaults for fields that choose among settings.datasets' datasets (any task's).

    Each such field gets a note saying where every choice would come from, and defaults to a
    choice found locally when its own default is not.
    """
    notes: dict[str, str] = {}
    defaults: dict[str, Any] = {}
    has_dir = any(f.name == "data_dir" for f in infos)
    data_dir = st.session_state.get(f"{prefix}_data_dir") if has_dir else None
    for f in infos:
        if not f.choices or not set(f.choices) <= set(datasets.DATASET_SIZES):
            continue
        notes[f.name] = "  \n".join(dataset_note(d, data_dir) for d in f.choices)
        local = [d for d in f.choices if datasets.find_local(d, data_dir or None) is not None]
        if local and f.default not in local:
            defaults[f.name] = local[0]
            notes[f.name] += f"  \nDefault: {dataset_title(local[0])}, the one available here."
    return notes, defaults


def start(
    task: str, raw: dict, name: str, wandb_mode: str, population: dict[str, str] | None, pbt: dict | None = None
) -> str | None:
    """Validate and launch; returns the run id (a population's launch id), or None with the errors kept for the form."""
    try:
        if population is None:
            cfg, axes = parse_config(task, raw), None
        else:
            axes, cfg = population_form.parse_population(task, raw, population)
            pbt = pbt_settings.check(pbt, axes, task, raw.get("steps")) if pbt is not None else None
    except ConfigError as exc:
        st.session_state[f"errors_{task}"] = exc.errors
        return None
    st.session_state.pop(f"errors_{task}", None)
    if axes is None:
        return launcher.launch(task, cfg, name=name or None, wandb_mode=wandb_mode).name
    population = launcher.Population(axes, pbt)
    return launcher.launch_population(task, cfg, population, name=name or None, wandb_mode=wandb_mode).name


TRAINING_NOW_EVERY_S = refresh_timings.seconds("launch_training_now")


def active_runs() -> None:
    """Links to the runs that are training now (from any tab, the CLI included), redrawn every second.

    A fragment of its own, not the other pages' watcher: that one reruns the whole page, and a
    rerun of this page while Start switches to Live crashed the browser's page ("Bad delta path
    index"). This one only redraws its own list, from the run watcher's (folder, active) signature,
    and draws nothing once the session has left this page (a refresh that comes late).
    """
    st.fragment(_training_now, run_every=TRAINING_NOW_EVERY_S)()


def _training_now() -> None:
    if st.session_state.get(state.PAGE_KEY) != "new":
        return
    signature = provider.runs_signature(provider.runs_root())
    cached = st.session_state.get("_training_now")
    if cached is None or cached[0] != signature:
        active = [(r.run_id, f"{r.name} · {r.task}") for r in run_list.all_runs() if run_list.is_active(r.status)]
        cached = st.session_state["_training_now"] = (signature, active)
    if cached[1]:
        st.caption(f"Training now ({len(cached[1])}):")
        for run_id, label in cached[1]:
            link = safe_text.md(label)  # a run's name: text, never markdown
            st.page_link("views/live.py", label=link, icon=":material/monitoring:", query_params={"run": run_id})


def population_lists(task: str, prefix: str, infos: list[FieldInfo], error: str | None) -> dict[str, str] | None:
    """The population toggle and lists (fields the engine can vary), with K and the list's error."""
    labels = {f.name: f"{f.label}s" for f in infos if f.name in VARIED}
    population = population_input(prefix, labels) if labels else None
    if population is None:
        return None
    k = population_form.population_size(population)
    if k > 1:
        sizes = [
            f"{len(population_form.split_list(v))} {labels[f].lower()}" for f, v in population.items() if v.strip()
        ]
        st.caption(f"**K = {k} runs** ({' × '.join(sizes)}), trained together in one process.")
    else:
        st.caption("K = 1: list at least two values (comma-separated).")
    if error:
        field_error(error)
    return population


def task_form(task: str) -> tuple[Any, dict[str, str] | None, dict | None]:
    """The chosen task's population lists and form; (form values, population lists or None, PBT settings or None)."""
    prefix = form_prefix(task)
    infos = config_fields(task)
    errors = dict(st.session_state.get(f"errors_{task}", {}))
    population = population_lists(task, prefix, infos, errors.pop("population", None))
    pbt = pbt_panels.population_pbt(task, prefix, population, errors)
    k = population_form.population_size(population) if population is not None else 0
    label = f"Start population ({k} runs)" if k > 1 else "Start run"
    notes, defaults = dataset_fields(infos, prefix)
    disabled = [f for f, v in (population or {}).items() if v.strip()]
    values = config_form(prefix, infos, errors, FieldOverrides(disabled, notes, defaults), submit_label=label)
    return values, population, pbt


def page() -> None:
    """Draw the task picker, the population lists and the form of the chosen task."""
    st.title("New run")
    st.caption(
        f"Each run is its own process writing to {safe_text.code(provider.runs_root())}; "
        "it keeps going if you close the page. Scripts calling `jaxdash.init` write there too "
        "(`$JAXDASH_RUNS` picks another folder)."
    )
    tasks = list(available())
    task = st.segmented_control("Task", tasks, format_func=task_title, default=tasks[0], required=True, key="task")
    try:
        values, population, pbt = task_form(task)
    except ConfigError as exc:  # a user's task that cannot be imported: say why, in its own words
        st.error(safe_text.md(next(iter(exc.errors.values()))), icon=":material/error:")
        active_runs()
        return
    active_runs()
    from dashboard.forms.sweep_form import sweep_form

    study = sweep_form(task)  # a click on "Start sweep" queues it; Enter in its fields starts nothing
    if study is not None:
        state.leave_page("sweeps")
        st.switch_page("views/sweep.py", query_params={"study": study})
    inplace_chart.warm_up()  # the Live page's charts then draw without loading plotly.js first
    line_chart.warm_up()  # and the line charts' uPlot and chart files
    if not values.submitted:
        return
    try:
        run_id = start(task, values.raw, values.name, values.wandb_mode, population, pbt)
    except (OSError, ValueError, RuntimeError) as exc:
        st.error(safe_text.md(f"Could not start the run: {exc}"))
        return
    if run_id is None:
        st.rerun()  # redraw the form with each message under its field
    state.remember_run(run_id)
    state.leave_page("live")  # no late "Training now" refresh of this page mid-switch
    st.switch_page("views/live.py", query_params={"run": run_id})


page()
