"""What a training function returns."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class TrainResult:
    """Outcome of `train_regression` / `train_mnist`.

    state: "finished", or "stopped" when `should_stop()` ended it early.
    final: final metrics with the same tags as the logged scalars (e.g. "test/acc").
    steps: optimizer steps actually done.
    """

    state: str
    final: dict[str, float]
    steps: int
    extra: dict[str, Any] = field(default_factory=dict)
