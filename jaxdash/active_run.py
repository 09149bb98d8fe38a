"""The script's current run: the one `jaxdash.init` made last and that has not finished (W&B's `wandb.run`).

Module-level calls (`jaxdash.log`, `wandb.save`, `wandb.alert`, `wandb.log_artifact`, `watch`) act on it and
`jaxdash.session.init` sets it. It sits in a module of its own, below the run's modules, so those calls
reach the run without importing `session`, which imports them.
"""

from __future__ import annotations

from typing import Any

_CURRENT: Any = None  # a jaxdash.client.Run or jaxdash.disabled.DisabledRun


def current() -> Any:
    """The run `init` made last and that has not finished, or None."""
    return _CURRENT if _CURRENT is not None and not _CURRENT.finished else None


def set_current(run: Any) -> None:
    """Make `run` the current run (`init`)."""
    global _CURRENT
    _CURRENT = run


def current_run(what: str) -> Any:
    """The current run for a module-level call (`wandb.save`, ...); raises RuntimeError before `init`, as W&B."""
    run = current()
    if run is None:
        raise RuntimeError(f"jaxdash.{what}() before jaxdash.init()")
    return run
