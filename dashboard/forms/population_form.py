"""A population on the New run form: the form's comma lists become the CLI's --population axes.

`python -m training TASK --population lr=0.001,0.01 --population seed=0,1` trains every
combination at once (one process, `jax.vmap`). The form's lists are checked here, in the form's words
(settings.population checks the CLI's `--population` specs), each combination through
`parse_config` like a single run (the task's settings, no model code). No JAX and no Streamlit here.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from settings.config import ConfigError, parse_config
from settings.fields import field_label
from settings.population import MAX_MEMBERS, VARIED, member_raws
from settings.registry import task_settings


def split_list(text: str) -> list[str]:
    """ "0.001, 0.01 0.1" -> ["0.001", "0.01", "0.1"] (commas and/or spaces)."""
    return [v for v in text.replace(",", " ").split() if v]


def population_size(lists: Mapping[str, str]) -> int:
    """Members a set of comma lists makes (the cartesian product; an empty list does not vary)."""
    return math.prod(len(split_list(t)) for t in lists.values() if split_list(t))


def parse_population(task: str, raw: Mapping[str, Any], lists: Mapping[str, str]) -> tuple[dict[str, list[str]], Any]:
    """Validate a population given as comma lists per varied field, e.g. {"lr": "0.001,0.01", "seed": "0,1"}.

    Args:
      task: a task name or "module:Class" spec.
      raw: the form's other values (as for `parse_config`).
      lists: field -> comma list; an empty list keeps the form's single value.

    Returns:
      (axes for the CLI, e.g. {"lr": ["0.001", "0.01"], "seed": ["0", "1"]}; member 0's config).

    Raises:
      ConfigError: {"population": message} for a bad list (each member's other settings as usual).
    """
    axes = {k: split_list(v) for k, v in lists.items() if split_list(v)}
    cls = task_settings(task).Config
    varied_words = " and ".join(field_label(cls, f) for f in VARIED)
    unknown = set(axes) - set(VARIED)
    if unknown:
        raise ConfigError(
            {"population": f"A population can vary {varied_words} only (got {', '.join(sorted(unknown))})."}
        )
    size = math.prod(len(v) for v in axes.values()) if axes else 0
    if size < 2:
        raise ConfigError(
            {
                "population": f"A population needs at least two values of {varied_words.replace(' and ', ' or ')}, "
                "e.g. 0.001, 0.005, 0.02."
            }
        )
    if size > MAX_MEMBERS:
        raise ConfigError({"population": f"{size} members is too many; at most {MAX_MEMBERS} train together."})
    errors: dict[str, str] = {}
    cfgs: list[Any] = []
    for member in member_raws(raw, axes):
        try:
            cfgs.append(parse_config(task, member))
        except ConfigError as exc:  # a varied value's message goes under the lists, the others under their fields
            for field, message in exc.errors.items():
                errors["population" if field in axes else field] = message
    if errors:
        raise ConfigError(errors)
    seen = [tuple(getattr(c, f) for f in axes) for c in cfgs]
    if len(set(seen)) < len(seen):
        raise ConfigError({"population": "a value is listed twice (e.g. 0.001 and 1e-3); list each once."})
    return axes, cfgs[0]
