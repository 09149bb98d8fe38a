"""The population form's PBT settings: which metrics a task can rank by, their checks, the CLI's flags.

No Streamlit and no JAX here (training.engine.pbt imports JAX; its own `PbtConfig.validate` checks the same
bounds again in the training process). Messages name each setting by its label on the form.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from runstore import tags
from settings.config import ConfigError
from settings.registry import task_settings

METRIC_LABELS = {
    tags.TEST_LOSS: "Test loss",
    tags.TEST_ACC: "Test accuracy",
    tags.TRAIN_LOSS: "Train loss",
    tags.TRAIN_ACC: "Train accuracy",
}
LABELS = {
    "pbt_interval": "Copy every (steps)",
    "pbt_metric": "Rank members by",
    "pbt_fraction": "Share of members replaced",
    "pbt_resample": "Chance of a fresh learning rate",
}


def metric_choices(task: str) -> dict[str, str]:
    """{tag: label} a population of `task` can be ranked by, the default first.

    A classifier (its panels show accuracy) evaluates a test set: test loss first. Other tasks log
    train loss only.
    """
    try:
        classifies = "accuracy" in task_settings(task).panels
    except ConfigError:
        classifies = False
    order = (tags.TEST_LOSS, tags.TEST_ACC, tags.TRAIN_LOSS, tags.TRAIN_ACC) if classifies else (tags.TRAIN_LOSS,)
    return {t: METRIC_LABELS[t] for t in order}


def _number(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def check(settings: Mapping[str, Any], axes: Mapping[str, Sequence[str]], task: str, steps: Any = None) -> dict:
    """The CLI's PBT settings from the form's, e.g. {"interval": 100, "metric": "train/loss", ...}.

    Args:
      settings: the form's values {"interval", "metric", "fraction", "resample"}.
      axes: the population's lists ({"lr": [...], ...}); PBT perturbs learning rates, so it needs two.
      task: the task (its metrics).
      steps: the run's step count when the form has one (a copy interval must be shorter).

    Raises:
      ConfigError: {"pbt_<setting>" or "population": message}, every bad setting at once.
    """
    errors: dict[str, str] = {}
    if len(axes.get("lr", ())) < 2:
        errors["population"] = "Population-based training needs at least two learning rates in the population."
    interval = _number(settings.get("interval"))
    total = _number(steps)
    if not (math.isfinite(interval) and interval == int(interval) and interval >= 1):
        errors["pbt_interval"] = f"{LABELS['pbt_interval']} must be a whole number of steps, at least 1."
    elif math.isfinite(total) and interval >= total:
        errors["pbt_interval"] = (
            f"{LABELS['pbt_interval']} must be less than the run's {int(total)} steps, or no member is ever copied."
        )
    fraction = _number(settings.get("fraction"))
    if not 0 < fraction <= 0.5:
        errors["pbt_fraction"] = (
            f"{LABELS['pbt_fraction']} must be more than 0 and at most 0.5 "
            f"(the worst half copies the best half); got {settings.get('fraction')}."
        )
    resample = _number(settings.get("resample"))
    if not 0 <= resample <= 1:
        errors["pbt_resample"] = f"{LABELS['pbt_resample']} is a probability: 0 to 1 (got {settings.get('resample')})."
    metrics = metric_choices(task)
    metric = settings.get("metric") or next(iter(metrics))
    if metric not in metrics:
        errors["pbt_metric"] = f"{LABELS['pbt_metric']}: choose one of {', '.join(metrics.values())}."
    if errors:
        raise ConfigError(errors)
    return {"interval": int(interval), "metric": metric, "fraction": fraction, "resample": resample}


def summary(k: int, fraction: float, interval: int, metric_label: str) -> str:
    """What the settings do, in one line (the engine's own count: at least one member each time)."""
    n = max(1, math.floor(k * fraction)) if fraction > 0 else 0
    if not n or interval < 1:
        return ""
    nudge = "continue with its learning rate ×0.8 or ×1.25"
    if n == 1:
        return f"Every {interval} steps the worst of {k} members by {metric_label.lower()} copies the weights of the best and continues with its learning rate ×0.8 or ×1.25."
    return (
        f"Every {interval} steps the {n} worst of {k} members by {metric_label.lower()} each copy the weights of one "
        f"of the {n} best and {nudge}."
    )
