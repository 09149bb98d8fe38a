"""Streamlit widgets of the dashboard: each draws itself and returns plain values.

No run store, no launching here: pages decide what the values mean.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
import streamlit as st

from training.config import CONFIG_CLASSES, DATASET_SIZES, OPTIMIZERS

WANDB_MODES = ("auto", "offline", "online", "disabled")

# field -> (label, help, kind); kind picks the widget. Text inputs keep free-form values
# (learning rates like 1e-3, "128,128", empty = all) for parse_config to validate.
FIELDS: dict[str, tuple[str, str, str]] = {
    "points": ("Data points", "Number of (x, y) samples.", "int"),
    "noise": ("Noise std", "Gaussian noise added to y.", "float"),
    "true_weight": ("True weight", "w of the line that generates the data.", "float"),
    "true_bias": ("True bias", "b of the line that generates the data.", "float"),
    "dataset": ("Dataset", "MNIST digits or Fashion-MNIST clothes.", "dataset"),
    "data_dir": ("Data directory", "Where the dataset files are; empty = default locations.", "text"),
    "hidden": ("Hidden layers", "Comma-separated layer sizes, e.g. 128,128.", "text"),
    "optimizer": ("Optimizer", "Optax optimizer.", "optimizer"),
    "lr": ("Learning rate (lr)", "Step size, e.g. 0.001 or 1e-3.", "text"),
    "steps": ("Steps", "Gradient steps.", "int"),
    "batch_size": ("Batch size", "Examples per step.", "int"),
    "epochs": ("Epochs", "Passes over the training set.", "int"),
    "seed": ("Seed", "Random seed.", "int"),
    "log_every": ("Log every (steps)", "Steps per jitted chunk; one metrics record per chunk.", "int"),
    "eval_every": ("Evaluate every (steps)", "0 = once per epoch.", "int"),
    "train_limit": ("Train examples", "Use only the first N; empty = all.", "text"),
    "test_limit": ("Test examples", "Use only the first N; empty = all.", "text"),
}
STATE_STYLE: dict[str, tuple[str, str]] = {  # state -> (badge color, material icon)
    "starting": ("blue", ":material/hourglass_top:"),
    "running": ("blue", ":material/play_circle:"),
    "finished": ("green", ":material/check_circle:"),
    "stopped": ("gray", ":material/stop_circle:"),
    "failed": ("red", ":material/error:"),
    "diverged": ("orange", ":material/trending_up:"),
    "crashed": ("red", ":material/dangerous:"),
}


@dataclass
class FormValues:
    """What the launch form returns: raw config values for `parse_config`, plus run options."""

    submitted: bool
    raw: dict[str, Any] = field(default_factory=dict)
    name: str = ""
    wandb_mode: str = "auto"


def _default_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, tuple):
        return ",".join(str(v) for v in value)
    return f"{value:g}" if isinstance(value, float) else str(value)


def dataset_title(name: str) -> str:
    """ "fashion_mnist" -> "Fashion-MNIST"."""
    return name.replace("_", "-").replace("mnist", "MNIST").replace("fashion", "Fashion")


def _field_input(task: str, name: str, default: Any, disabled: bool = False) -> Any:
    label, help_, kind = FIELDS.get(name, (name, "", "text"))
    key = f"{task}_{name}"
    if disabled:
        help_ = f"{help_} Set by the population above."
    if kind == "int":
        return st.number_input(label, value=int(default), step=1, help=help_, key=key, disabled=disabled)
    if kind == "float":
        return st.number_input(
            label, value=float(default), step=0.1, format="%.3f", help=help_, key=key, disabled=disabled
        )
    if kind == "optimizer":
        return st.selectbox(label, OPTIMIZERS, index=OPTIMIZERS.index(default), help=help_, key=key, disabled=disabled)
    if kind == "dataset":
        names = list(DATASET_SIZES)
        return st.selectbox(
            label, names, index=names.index(default), help=help_, key=key, format_func=dataset_title, disabled=disabled
        )
    placeholder = {"data_dir": "default locations", "train_limit": "all", "test_limit": "all"}.get(name)
    return st.text_input(
        label, value=_default_text(default), help=help_, key=key, placeholder=placeholder, disabled=disabled
    )


def field_error(name: str, message: str) -> None:
    """One validation message, drawn right under its field and naming it."""
    st.error(f"**{name}**: {message}", icon=":material/error:")


def config_form(
    task: str,
    errors: dict[str, str] | None = None,
    columns: int = 3,
    *,
    disabled: Collection[str] = (),
    notes: Mapping[str, str] | None = None,
    submit_label: str = "Start run",
) -> FormValues:
    """The launch form of `task`: one input per config field (dataclass defaults), run name and W&B mode.

    Args:
      task: "regression" or "mnist".
      errors: {field: message} from a previous submit, each shown under its field.
      columns: fields per row.
      disabled: fields shown greyed out (e.g. set by a population instead).
      notes: {field: markdown} captions drawn under a field (e.g. where a dataset was found).
      submit_label: the text of the submit button.

    Returns:
      FormValues with raw (unvalidated) values; `submitted` is True on the click of Start.
    """
    errors = dict(errors or {})
    fields = [f for f in dataclasses.fields(CONFIG_CLASSES[task]) if f.name in FIELDS]
    raw: dict[str, Any] = {}
    with st.form(f"launch_{task}", border=True):
        top = st.columns([2, 1])
        name = top[0].text_input(
            "Run name",
            placeholder=f"e.g. {task}-baseline",
            key=f"{task}_run_name",
            help="Shown in the runs table; the run id adds date and a suffix.",
        )
        wandb_mode = top[1].selectbox(
            "W&B mode",
            WANDB_MODES,
            key=f"{task}_wandb",
            help="auto = online when logged in to W&B, else offline (sync later).",
        )
        for start in range(0, len(fields), columns):
            cols = st.columns(columns)
            for col, f in zip(cols, fields[start : start + columns], strict=False):
                with col:
                    raw[f.name] = _field_input(task, f.name, f.default, f.name in disabled)
                    if f.name in (notes or {}):
                        st.caption((notes or {})[f.name])
                    if f.name in errors:
                        field_error(f.name, errors.pop(f.name))
        for name_, message in errors.items():  # errors on settings the form has no input for
            field_error(name_, message)
        submitted = st.form_submit_button(submit_label, type="primary", icon=":material/play_arrow:")
    return FormValues(submitted, raw, (name or "").strip(), wandb_mode)


def population_input(task: str, fields: Mapping[str, str]) -> dict[str, str] | None:
    """A toggle that opens one comma-list input per varied field; returns {field: text} when on, else None.

    Args:
      task: keys the widgets per task.
      fields: field -> label, e.g. {"lr": "Learning rates", "seed": "Seeds"}.
    """
    on = st.toggle(
        "Population: train several variants at once",
        key=f"{task}_pop_on",
        help="One run per combination of the listed values, all trained together in one process (jax.vmap).",
    )
    if not on:
        return None
    examples = {"lr": "e.g. 0.001, 0.005, 0.02", "seed": "e.g. 0, 1"}
    cols = st.columns(len(fields))
    return {
        name: col.text_input(label, key=f"{task}_pop_{name}", placeholder=examples.get(name, "comma-separated"))
        for col, (name, label) in zip(cols, fields.items(), strict=True)
    }


def status_badge(state: str | None) -> None:
    """A coloured badge for a run state."""
    state = state or "unknown"
    color, icon = STATE_STYLE.get(state, ("gray", ":material/help:"))
    st.badge(state, color=color, icon=icon)


def runs_table(
    df: pd.DataFrame, key: str = "runs_table", default: list[int] | None = None, hidden: tuple[str, ...] = ("run_id",)
) -> list[int]:
    """The runs table with multi-row selection; returns the selected row positions.

    `default` rows are selected when a table with this key is first drawn.
    """
    columns = [c for c in df.columns if c not in hidden]
    event = st.dataframe(
        df,
        key=key,
        hide_index=True,
        on_select="rerun",
        selection_mode="multi-row",
        column_order=columns,
        selection_default={"selection": {"rows": list(default or [])}},
        placeholder="—",
        column_config={
            "started": st.column_config.DatetimeColumn("started", format="YYYY-MM-DD HH:mm:ss"),
            "duration": st.column_config.NumberColumn("duration (s)", format="%.1f"),
            "final loss": st.column_config.NumberColumn("final loss", format="%.4g"),
            "test acc": st.column_config.NumberColumn("test acc", format="percent"),
        },
    )
    return list(event.selection.rows) if event is not None else []
