"""A run's states, defined once: what status.json's "state" may hold and what each group of states means.

Writers: the training process (`starting`, `running`, then one ended state: `pruned` for a sweep's
trial its study's pruner stopped), the page's queue (`queued`), and the readers' own verdicts
(`crashed` for a "running" run whose process is gone, `damaged` for a folder that cannot be read). Every module that asks "is it over?", "can it be
resumed?" or "is it a problem?" uses these tuples, never its own list.
"""

from __future__ import annotations

QUEUED, STARTING, RUNNING = "queued", "starting", "running"
FINISHED, STOPPED, FAILED, DIVERGED, CRASHED = "finished", "stopped", "failed", "diverged", "crashed"
PRUNED = "pruned"  # a sweep trial stopped by the study's pruner (Optuna's PRUNED): ended on purpose, not resumed
DAMAGED = "damaged"  # a reader's verdict on a folder it cannot read; never written to status.json
STALLED = "stalled"  # a reader's verdict on a running run making no progress (runstore.processes); never written

ACTIVE = (QUEUED, STARTING, RUNNING)  # may still change: pages follow these runs
ENDED = (FINISHED, FAILED, STOPPED, DIVERGED, CRASHED, PRUNED)  # final until resumed: a reader may cache them
PROBLEMS = (FAILED, DIVERGED, CRASHED, DAMAGED)  # shown with their message
RESUMABLE = (STOPPED, CRASHED, FAILED)  # from the newest checkpoint (failed: e.g. a full disk, once space is freed)
NOT_RESUMED = (FINISHED, DIVERGED, PRUNED)  # resume leaves these alone: done, would diverge again, or judged

# The CLI's exit status and W&B's exit_code; else 1.
EXIT_CODES = {FINISHED: 0, STOPPED: 0, PRUNED: 0, FAILED: 1, DIVERGED: 3}
