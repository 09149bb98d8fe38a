"""Population-based training's copy events, as the charts show them. Pure: data in, values out.

A PBT member's lineage (artifacts/tables/pbt__lineage.json, written by training/engine/pbt.py) lists every
time it copied another member: the step, the source member's index, its learning rate before and
after, and why ("ranked low" or "diverged"). The metric row of that step still holds the member's
own values; its next row already trains on the copied weights with the new learning rate. The charts'
specs: dashboard/panels/member_lines.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

Curve = tuple[np.ndarray, np.ndarray]


@dataclass(frozen=True)
class CopyEvent:
    """One copy: at `step` this member took member `source`'s weights and lr `old_lr` became `new_lr`."""

    step: int
    source: int
    old_lr: float
    new_lr: float
    reason: str


def _number(v: Any) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return float("nan")


def copy_events(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[CopyEvent]:
    """The events of a lineage table, by step; rows that are not a copy (wrong types, missing columns) are left out."""
    need = ("step", "source", "old_lr", "new_lr", "reason")
    if not set(need) <= set(columns):
        return []
    at = {c: list(columns).index(c) for c in need}
    events = []
    for r in rows:
        step, source = _number(r[at["step"]]), _number(r[at["source"]])
        if not (np.isfinite(step) and np.isfinite(source)):
            continue
        reason = str(r[at["reason"]])
        events.append(CopyEvent(int(step), int(source), _number(r[at["old_lr"]]), _number(r[at["new_lr"]]), reason))
    return sorted(events, key=lambda e: e.step)


def copy_text(event: CopyEvent, source_name: str | None = None) -> str:
    """ "step 50: copied member 2 (lr=0.3), ranked low; lr 0.0001 → 0.24" (the hover of a copy marker)."""
    who = f"member {event.source}" + (f" ({source_name})" if source_name else "")
    return f"step {event.step}: copied {who}, {event.reason}; lr {event.old_lr:.3g} → {event.new_lr:.3g}"


def value_at(curve: Curve, step: int) -> float | None:
    """The curve's last finite value at or before `step` (None if it has none): where a copy marker sits."""
    x, y = (np.asarray(a, dtype=float) for a in curve)
    keep = (x <= step) & np.isfinite(y)
    return float(y[keep][-1]) if keep.any() else None
