"""A population's runs as one group on the pages: which runs belong together, their short names, their state.

Each member of a population is an ordinary run folder whose config.json and status.json carry "group"
(the group id) and "member" (its index). No JAX and no Streamlit here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from dashboard.reading import provider
from settings.population import VARIED


def group_of(run: provider.RunInfo) -> str | None:
    """The population a run belongs to (status.json "group"), or None for a single run."""
    return run.status.get("group")


def short_id(group: str | None) -> str | None:
    """A group id without its leading date and time ("20250101-120000-lr-sweep-pop-2c61" -> "lr-sweep-pop-2c61")."""
    if group is None:
        return None
    parts = group.split("-", 2)
    return parts[2] if len(parts) == 3 and parts[0].isdigit() and parts[1].isdigit() else group


def members(runs: Sequence[provider.RunInfo], group: str) -> list[provider.RunInfo]:
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


def labels(runs: Sequence[provider.RunInfo]) -> list[str]:
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
