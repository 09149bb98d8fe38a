"""Populations on the page: the form's lists become the CLI's --population axes; runs form groups.

`python -m training TASK --population lr=0.001,0.01 --population seed=0,1` trains every
combination at once (one process, `jax.vmap`). Each member is an ordinary run directory whose
config.json and status.json carry "group" (group id) and "member" (index). No JAX and no
Streamlit here. The form's lists are checked here, in the form's words (training.runs.population
checks the CLI's `--population` specs),
each combination through `parse_config` like a single run (the task's settings, no model code).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from runstore import run_store
from training import cli
from training.config import ConfigError, parse_config
from training.runs.population import VARIED, member_raws
from training.settings import field_label
from training.tasks import task_settings

MAX_MEMBERS = cli.MAX_MEMBERS  # all members train in one process; beyond this a typo is likelier than intent


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


def group_of(run: run_store.RunInfo) -> str | None:
    """The population a run belongs to (status.json "group"), or None for a single run."""
    return run.status.get("group")


def short_id(group: str | None) -> str | None:
    """A group id without its leading date and time ("20250101-120000-lr-sweep-pop-2c61" -> "lr-sweep-pop-2c61")."""
    if group is None:
        return None
    parts = group.split("-", 2)
    return parts[2] if len(parts) == 3 and parts[0].isdigit() and parts[1].isdigit() else group


def members(runs: Sequence[run_store.RunInfo], group: str) -> list[run_store.RunInfo]:
    """The runs of `group`, in member order."""
    return sorted((r for r in runs if group_of(r) == group), key=lambda r: r.status.get("member") or 0)


def varied(configs: Sequence[Mapping[str, Any]]) -> list[str]:
    """The varied fields whose values differ between these members' configs."""
    return [f for f in VARIED if len({str(c.get(f)) for c in configs}) > 1]


def label(config: Mapping[str, Any], fields: Sequence[str], member: int | None = None) -> str:
    """A member's short name from its varied values, e.g. "lr=0.005 seed=1" (else "#<member>")."""

    def fmt(v: Any) -> str:
        return f"{v:g}" if isinstance(v, float) else str(v)

    parts = [f"{f}={fmt(config.get(f))}" for f in fields]
    return " ".join(parts) if parts else f"#{member if member is not None else '?'}"


def labels(runs: Sequence[run_store.RunInfo]) -> list[str]:
    """One unique short name per member of a group, in order."""
    fields = varied([r.config for r in runs])
    out = [label(r.config, fields, r.status.get("member")) for r in runs]
    if len(set(out)) < len(out):
        out = [f"#{r.status.get('member')} {o}" for r, o in zip(runs, out, strict=True)]
    return out


def group_state(statuses: Sequence[Mapping[str, Any]]) -> str:
    """One state for a group: the first of starting/running that any member is in, else the commonest."""
    states = [s.get("state") or "?" for s in statuses]
    for s in ("starting", "running"):
        if s in states:
            return s
    return max(set(states), key=states.count) if states else "?"
