"""Training in this process with no run directory: tests, notebooks and benchmarks.

from training.runs.in_memory import train
(result,) = train("regression", RegressionConfig(steps=200))
"""

from __future__ import annotations

from typing import Any

from training.engine.loop import Engine
from training.engine.members import Members
from training.engine.pbt import PbtConfig
from training.engine.result import TrainResult
from training.tasks.base import Task


def train(
    task: type[Task] | str,
    cfgs: Any,
    writers: Any = None,
    should_stop: Any = lambda: False,
    pbt: PbtConfig | None = None,
) -> list[TrainResult]:
    """Train in this process with no run directory (tests, notebooks): one config or a list (a population).

    Args:
      task: a Task subclass or a task name / spec.
      cfgs: a config, or one per member.
      writers: a writer, or one per member (default: MemoryWriter each).
      should_stop: polled between chunks.
      pbt: population-based training settings (a population only).

    Returns:
      One TrainResult per member; a diverged member's has state "diverged" and extra["message"].
    """
    from runwriters.base import MemoryWriter
    from training.engine.members import Member
    from training.tasks import load_task

    task_cls = load_task(task) if isinstance(task, str) else task
    cfgs = list(cfgs) if isinstance(cfgs, (list, tuple)) else [cfgs]
    if writers is None:
        writers = [MemoryWriter() for _ in cfgs]
    writers = list(writers) if isinstance(writers, (list, tuple)) else [writers]
    members = Members([Member(None, w, c.lr) for w, c in zip(writers, cfgs, strict=True)])
    results = Engine(task_cls, cfgs, members, should_stop, pbt=pbt).run()
    for i in members.alive():
        members.end(i, results[i].state)
    return results
