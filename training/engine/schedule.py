"""One helper for every "every N steps / every N seconds" decision (after CLU's PeriodicAction).

The engine decides logging, evaluation, snapshots, histograms and checkpoints between chunks,
so a schedule is asked at chunk boundaries: it fires at the first boundary at or past each
multiple of `every_steps`, or once `every_secs` have passed since it last fired.
"""

from __future__ import annotations

import time


class Periodic:
    """Fires every `every_steps` steps and/or every `every_secs` seconds (0 or None = never by that rule).

    Args:
      every_steps: step period; fires at the first asked step at or past each multiple.
      every_secs: wall-clock period.
      last_step: the step it last fired (a resumed run passes its checkpoint step).
    """

    def __init__(self, every_steps: int | None = None, every_secs: float | None = None, last_step: int = 0):
        self.every_steps = every_steps or 0
        self.every_secs = every_secs or 0.0
        self.last_step = last_step
        self.last_time = time.monotonic()

    def due(self, step: int) -> bool:
        """True when a period has passed since the last time it fired (does not fire it)."""
        by_steps = self.every_steps > 0 and step // self.every_steps > self.last_step // self.every_steps
        by_time = self.every_secs > 0 and time.monotonic() - self.last_time >= self.every_secs
        return by_steps or by_time

    def fire(self, step: int) -> None:
        """Record that the action ran at `step` (also when it ran for another reason, e.g. at an epoch end)."""
        self.last_step, self.last_time = step, time.monotonic()

    def __call__(self, step: int, force: bool = False) -> bool:
        """`due(step)` or `force`; fires when True."""
        if force or self.due(step):
            self.fire(step)
            return True
        return False
