"""W&B history rows aligned with the optimizer step, buffered until the run exists.

Each row is one optimizer step (`_step == global_step`). A step's row stays open (`commit=False`)
until a later step is logged, so media written after a chunk (a snapshot at the same step) join
their row. A flush's rows reach wandb-core in one hop (`one_hop`), not one hop a row. Rows written while `wandb.init` is still running wait in the buffer. Every new key gets
a `define_metric`: plotted against `global_step` (`epoch/*` against `epoch`), with a best-so-far
summary (min for losses, max for accuracies).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from typing import Any

from runwriters.wandb.one_hop import one_hop

log = logging.getLogger(__name__)


def summary_kind(key: str) -> str | None:
    """Best-so-far summary W&B keeps for a metric: min for losses, max for accuracies."""
    leaf = key.rsplit("/", 1)[-1]
    if leaf.endswith("loss"):
        return "min"
    if leaf.endswith(("acc", "accuracy")):
        return "max"
    return None


class StepRows:
    """Buffered rows by step, logged in step order to `run` (set once `wandb.init` returned)."""

    step_key = "global_step"  # the history field a row's step is read back from (a resume's held steps)

    def __init__(self) -> None:
        self.run: Any = None
        self.open_step: int | None = None  # logged with commit=False: media of the same step still join it
        self.lock = threading.Lock()  # the init thread refills rows while the trainer may flush
        self.held: set[int] = set()  # steps a resume's earlier W&B folders hold: their rows are there, whole
        self._rows: dict[int, dict[str, Any]] = {}
        self._defined: set[str] = set()

    def row(self, step: int) -> dict[str, Any]:
        """The buffered row of `step` (created empty), to update in place."""
        return self._rows.setdefault(int(step), {})

    def __bool__(self) -> bool:
        return bool(self._rows)

    def flush(self) -> None:
        """Log the buffered rows in step order (the run must exist)."""
        with self.lock, one_hop(self.run):
            rows, self._rows = self._rows, {}
            for step in sorted(rows):
                if rows[step] and step not in self.held:  # a held step's row, media too, is in an earlier folder
                    self.log(step, rows[step])

    def _define(self, keys: Any) -> None:
        for key in keys:
            if key in self._defined or key in ("global_step", "epoch"):
                continue
            self._defined.add(key)
            kind = summary_kind(key)
            step_metric = "epoch" if key.startswith("epoch/") else "global_step"
            self.run.define_metric(key, step_metric=step_metric, **({"summary": kind} if kind else {}))

    def log(self, step: int, data: Mapping[str, Any]) -> None:
        """Log `data` into step's row, which stays open (commit=False) until a later step is logged."""
        self._define(data)
        row = {**data, "global_step": step}
        start = getattr(self.run, "starting_step", 0) or 0
        if step < start:
            # An online resume starts past this step; logged without `step=` it still plots at global_step.
            self.run.log(row, commit=True)
            return
        if self.open_step is not None and step < self.open_step:
            # A step already committed cannot take more keys: join the open row, keeping its global_step.
            log.debug("W&B row for step %d arrived after step %d; logged at %d", step, self.open_step, self.open_step)
            self.run.log(dict(data), step=self.open_step, commit=False)
            return
        self.run.log(row, step=step, commit=False)
        self.open_step = step
