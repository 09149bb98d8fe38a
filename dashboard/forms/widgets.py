"""Streamlit widgets of the dashboard: each draws itself and returns plain values.

No run store, no launching here: pages decide what the values mean.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

import streamlit as st

from dashboard.panels import safe_text
from runwriters.wandb.mode import MODES as WANDB_MODES
from settings.fields import FieldInfo

STATE_STYLE: dict[str, tuple[str, str]] = {  # state -> (badge color, material icon)
    "queued": ("gray", ":material/schedule:"),
    "starting": ("blue", ":material/hourglass_top:"),
    "running": ("blue", ":material/play_circle:"),
    "finished": ("green", ":material/check_circle:"),
    "stopped": ("gray", ":material/stop_circle:"),
    "pruned": ("violet", ":material/content_cut:"),  # a sweep's pruner stopped it early
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


@dataclass(frozen=True)
class FieldOverrides:
    """What the page says about some of a form's fields beyond their config metadata.

    disabled: fields shown greyed out (e.g. set by a population instead).
    notes: {field: markdown} captions drawn under a field (e.g. where a dataset was found).
    defaults: {field: value} shown instead of the config's own default (e.g. a dataset found locally).
    """

    disabled: Collection[str] = ()
    notes: Mapping[str, str] = field(default_factory=dict)
    defaults: Mapping[str, Any] = field(default_factory=dict)


def _default_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, tuple):
        return ",".join(str(v) for v in value)
    return f"{value:g}" if isinstance(value, float) else str(value)


def dataset_title(name: str) -> str:
    """ "fashion_mnist" -> "Fashion-MNIST"."""
    return name.replace("_", "-").replace("mnist", "MNIST").replace("fashion", "Fashion")


def _help(info: FieldInfo, disabled: bool) -> str:
    """The field's help text with its bounds, as `--help` shows them."""
    bounds = []
    if info.min is not None:
        bounds.append(f"{'>' if info.min_exclusive else '>='} {info.min:g}")
    if info.max is not None:
        bounds.append(f"<= {info.max:g}")
    text = info.help + (f" ({', '.join(bounds)})" if bounds else "")
    return f"{text} Set by the population above." if disabled else text


def _float_step(default: float) -> float:
    """A step of the default's own order of magnitude (0.001 for 0.003, 0.1 for 0.5, 1 for 2)."""
    return 10.0 ** math.floor(math.log10(abs(default))) if default and math.isfinite(default) else 0.1


def _in_bounds(info: FieldInfo, value: float) -> bool:
    return (info.min is None or value >= info.min) and (info.max is None or value <= info.max)


def field_input(info: FieldInfo, key: str, default: Any, disabled: bool = False) -> Any:
    """One widget for one config field, picked by its metadata; returns its raw value.

    Choices: a select box. Whole numbers and numbers: number inputs bounded by the field's min/max.
    Lists ("128,128"), optional values (empty = None) and text: a text input, checked by parse_config.
    """
    kw = dict(help=_help(info, disabled), key=key, disabled=disabled)
    if info.choices:
        options = list(info.choices)
        index = options.index(default) if default in options else 0
        return st.selectbox(info.label, options, index=index, format_func=str, **kw)
    if info.kind == "bool" and not info.optional:
        return st.checkbox(info.label, value=bool(default), **kw)
    if info.kind in ("int", "float") and not info.optional and _in_bounds(info, default):
        if info.kind == "int":
            low = None if info.min is None else int(math.floor(info.min)) + int(info.min_exclusive)
            high = None if info.max is None else int(info.max)
            return st.number_input(info.label, low, high, int(default), step=1, **kw)
        low = None if info.min is None else float(info.min)
        high = None if info.max is None else float(info.max)
        return st.number_input(info.label, low, high, float(default), step=_float_step(default), format="%g", **kw)
    placeholder = "empty = default" if info.optional else None
    return st.text_input(info.label, value=_default_text(default), placeholder=placeholder, **kw)


def field_error(message: str) -> None:
    """One validation message, drawn right under its field (it names the field by its label)."""
    st.error(message, icon=":material/error:")


def _field_rows(
    infos: list[FieldInfo], prefix: str, errors: dict[str, str], columns: int, overrides: FieldOverrides
) -> dict[str, Any]:
    """`columns` fields per row, each with its note and its error (popped from `errors`) under it."""
    raw: dict[str, Any] = {}
    for start in range(0, len(infos), columns):
        for col, info in zip(st.columns(columns), infos[start : start + columns], strict=False):
            with col:
                default = overrides.defaults.get(info.name, info.default)
                disabled = info.name in overrides.disabled
                raw[info.name] = field_input(info, f"{prefix}_{info.name}", default, disabled)
                if info.name in overrides.notes:
                    st.caption(overrides.notes[info.name])
                if info.name in errors:
                    field_error(errors.pop(info.name))
    return raw


def config_form(
    prefix: str,
    infos: list[FieldInfo],
    errors: Mapping[str, str] | None = None,
    overrides: FieldOverrides = FieldOverrides(),
    *,
    columns: int = 3,
    submit_label: str = "Start run",
) -> FormValues:
    """A launch form generated from config metadata: one input per field, run name and W&B mode.

    Args:
      prefix: keys the widgets (`<prefix>_<field>`), e.g. the task's name.
      infos: the config's fields (`settings.fields.fields`); advanced ones go in an expander.
      errors: {field: message} from a previous submit, each shown under its field.
      overrides: fields disabled, captioned or given another default by the page.
      columns: fields per row.
      submit_label: the text of the submit button.

    Returns:
      FormValues with raw (unvalidated) values; `submitted` is True on the click of Start.
    """
    errors = dict(errors or {})
    # Enter in a field (Run name, a number) never starts a run: only the button does.
    with st.form(f"launch_{prefix}", border=True, enter_to_submit=False):
        top = st.columns([2, 1])
        name = top[0].text_input(
            "Run name",
            placeholder=f"e.g. {prefix}-baseline",
            key=f"{prefix}_run_name",
            help="Shown in the runs table; the run id adds date and a suffix.",
        )
        wandb_mode = top[1].selectbox(
            "W&B mode",
            WANDB_MODES,
            key=f"{prefix}_wandb",
            help="auto = online when logged in to W&B, else offline (sync later).",
        )
        raw = _field_rows([f for f in infos if not f.advanced], prefix, errors, columns, overrides)
        advanced = [f for f in infos if f.advanced]
        if advanced:
            with st.expander("Advanced settings", expanded=any(f.name in errors for f in advanced)):
                raw |= _field_rows(advanced, prefix, errors, columns, overrides)
        for message in errors.values():  # errors on settings the form has no input for
            field_error(message)
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


def pbt_input(
    prefix: str, labels: Mapping[str, str], metrics: Mapping[str, str], errors: dict[str, str]
) -> dict[str, Any] | None:
    """The population-based-training toggle and its four settings; {"interval", "metric", "fraction", "resample"} or None.

    Args:
      prefix: keys the widgets (`<prefix>_pbt_<setting>`).
      labels: {"pbt_interval": label, ...}: each setting's label, as its messages name it.
      metrics: {tag: label} the members can be ranked by, the default first.
      errors: the form's messages; each of "pbt_*" is popped and shown under its setting.
    """
    on = st.toggle(
        "Population-based training: the worst members copy the best ones while they train",
        key=f"{prefix}_pbt_on",
        help="Every few steps members are ranked; the worst take a copy of a best one's weights and optimizer "
        "state and go on with its learning rate, nudged up or down (Jaderberg et al., 2017).",
    )
    if not on:
        return None
    cols = st.columns(4)
    specs = {
        "interval": lambda label, key: st.number_input(
            label, value=100, step=10, key=key, help="How often members are ranked and the worst ones copy."
        ),
        "metric": lambda label, key: st.selectbox(
            label,
            list(metrics),
            format_func=lambda t: metrics.get(t, t),
            key=key,
            help="Lower loss or higher accuracy ranks higher.",
        ),
        "fraction": lambda label, key: _share_input(
            label, key, 0.25, "The worst this share of members copy from the best this share; at least one each time."
        ),
        "resample": lambda label, key: _share_input(
            label,
            key,
            0.0,
            "Instead of ×0.8 or ×1.25, draw a fresh learning rate (log-uniform over the listed ones) this often.",
        ),
    }
    values: dict[str, Any] = {}
    for col, (name, widget) in zip(cols, specs.items(), strict=True):
        with col:
            values[name] = widget(labels[f"pbt_{name}"], f"{prefix}_pbt_{name}")
            if f"pbt_{name}" in errors:
                field_error(errors.pop(f"pbt_{name}"))
    return values


def status_badge(state: str | None) -> None:
    """A coloured badge for a run state (status.json's word, shown as text)."""
    state = state or "unknown"
    color, icon = STATE_STYLE.get(state, ("gray", ":material/help:"))
    # st.badge escapes [ and ] itself (its label sits in a ":gray-badge[...]" directive): the rest is ours to escape
    st.badge(re.sub(r"\\([\[\]])", r"\1", safe_text.md(state)), color=color, icon=icon)


def _share_input(label: str, key: str, value: float, help_text: str) -> float:
    """A fraction of the population (PBT's settings), in steps of 5%."""
    return st.number_input(label, value=value, step=0.05, format="%g", key=key, help=help_text)
