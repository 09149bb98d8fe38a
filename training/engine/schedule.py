"""One helper for every "every N steps / every N seconds" decision (after CLU's PeriodicAction).

The engine decides evaluation, PBT, snapshots and checkpoints between chunks, all at once
(`Schedules.after_chunk` returns a `Due`), so a schedule is asked at chunk boundaries: it fires at the first boundary at or past each
multiple of `every_steps`, or once `every_secs` have passed since it last fired.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable


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


@dataclasses.dataclass(frozen=True)
class Due:
    """What runs after a chunk, decided in one place (`Schedules.after_chunk`)."""

    stopped: bool  # a stop was requested: snapshot and checkpoint now, then end
    pbt: bool  # exploit/explore the population
    evaluate: bool  # the test split
    snapshot: bool  # task summaries with images
    live_fit: bool  # the fitted curve only (a table, no images), between snapshots
    checkpoint: bool

    @property
    def needs_state(self) -> bool:
        """Something due reads the state after this chunk (so the next chunk may not start before it)."""
        return self.stopped or self.pbt or self.evaluate or self.snapshot or self.live_fit or self.checkpoint


@dataclasses.dataclass(frozen=True)
class Periods:
    """How often a run evaluates, checkpoints, exploits (PBT) and writes its task summaries.

    eval_every / ckpt_every: the config's periods in steps (0: never by steps).
    pbt_interval: PBT's period in steps, None without PBT.
    snapshots: task summaries spread over the run; ckpt_secs / live_fit_secs: the engine's periods in seconds.
    """

    eval_every: int
    ckpt_every: int
    pbt_interval: int | None
    snapshots: int
    ckpt_secs: float
    live_fit_secs: float


class Schedules:
    """Every periodic decision of a run, asked once per chunk.

    Args:
      total_steps: the run's length (snapshots are spread over it).
      last_step: where the run starts (a resumed run's checkpoint step).
      periods: how often each thing is due.
    """

    def __init__(self, total_steps: int, last_step: int, periods: Periods) -> None:
        p = periods
        self.snapshots = Periodic(every_steps=max(1, total_steps // p.snapshots), last_step=last_step)
        self.live_fits = Periodic(every_secs=p.live_fit_secs)  # the page's fitted curve slides between snapshots
        self.checkpoints = Periodic(p.ckpt_every, p.ckpt_secs, last_step=last_step)
        self.evals = Periodic(p.eval_every, last_step=last_step)
        self.pbt = Periodic(p.pbt_interval, last_step=last_step) if p.pbt_interval else None
        self.total_steps = total_steps

    def after_chunk(
        self,
        step: int,
        epoch_end: bool,
        batched: bool,
        stop_requested: Callable[[], bool],
        can_evaluate: bool,
        fit_panel: bool,
    ) -> Due:
        """What is due at `step`; `epoch_end`: the chunk ended an epoch (of a `batched` task: an evaluation)."""
        done = step >= self.total_steps
        stopped = not done and stop_requested()
        pbt = self.pbt is not None and self.pbt(step)
        evaluate = can_evaluate and self.evals(step, force=epoch_end and batched or pbt)
        snapshot = not done and self.snapshots(step, force=stopped)
        if snapshot:
            self.live_fits.fire(step)
        live_fit = not done and not snapshot and fit_panel and self.live_fits(step)
        checkpoint = self.checkpoints(step, force=stopped or done or epoch_end)
        return Due(stopped, pbt, evaluate, snapshot, live_fit, checkpoint)
