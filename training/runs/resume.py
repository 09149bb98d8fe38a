"""Continue a stopped, crashed or failed run from its latest checkpoint (`python -m training resume DIR`).

metrics.jsonl loses the records past the checkpoint step (they are logged again, identically),
TensorBoard purges its events past it, and W&B continues the same run id. A population member
resumes with every resumable member of its population, as one program again.
"""

from __future__ import annotations

import os
import socket
import sys
import time
from pathlib import Path
from typing import Any

from runstore import run_states, run_store
from runstore.run_folder import RunFolder
from training.engine.pbt import PbtConfig
from training.errors import CannotResume
from training.runs.run import Outcome, train_members
from training.settings import parse_config
from training.tasks import load_task
from training.writers.base import Tracking

_WHY_NOT = {
    "running": "it is still running; stop it first",
    "finished": "it already finished",
    "diverged": "it diverged and would again; start a new run with a lower learning rate",
}


def _read_config(run_dir: Path) -> dict[str, Any]:
    doc = RunFolder(run_dir).config()
    if not isinstance(doc, dict) or not isinstance(doc.get("config"), dict):
        raise CannotResume(f"{run_dir} is not a run directory (no readable config.json).")
    return doc


def population_dirs(run_dir: Path, doc: dict[str, Any]) -> list[Path]:
    """The run dirs of `run_dir`'s population that can be resumed (itself alone for a single run), by member."""
    if not doc.get("group"):
        return [run_dir]
    found = []
    for d in run_dir.parent.iterdir():
        other = RunFolder(d).config() if d.is_dir() else None
        if isinstance(other, dict) and other.get("group") == doc["group"]:
            if run_store.read_status(d).get("state") not in run_states.NOT_RESUMED:
                found.append((int(other.get("member", 0)), d))
    return [d for _, d in sorted(found)]


def _check_state(run_dir: Path) -> None:
    """CannotResume when the run's state forbids resuming (running, finished, diverged)."""
    state = run_store.read_status(run_dir).get("state")
    if state in _WHY_NOT:
        raise CannotResume(f"Cannot resume {run_dir.name}: {_WHY_NOT[state]}.")


def _check(run_dir: Path) -> int:
    """The newest intact checkpoint step `run_dir` can resume from; CannotResume when it has none.

    A damaged checkpoint (a file torn by a kill, an empty metadata file) is reported in one line and
    the one before it is tried; nothing of the run is changed here.
    """
    from training.runs.checkpoint import checkpoint_steps, resume_point
    from training.runs.checkpoint_check import first_intact

    _check_state(run_dir)
    newest = resume_point(run_dir)
    if newest is None:
        steps = checkpoint_steps(run_dir)
        found = f"its checkpoints {steps} are all past its last logged step" if steps else "it has no checkpoint"
        raise CannotResume(f"Cannot resume {run_dir.name}: {found} (in {RunFolder(run_dir).checkpoints}).")
    step, damaged = first_intact(run_dir, sorted((s for s in checkpoint_steps(run_dir) if s <= newest), reverse=True))
    damaged = [f"checkpoint {why}" for why in damaged]
    if step is not None:
        if damaged:
            print(f"warning: {'; '.join(damaged)}: resuming from step {step} instead", file=sys.stderr)
        return step
    raise CannotResume(
        f"Cannot resume {run_dir.name}: every checkpoint is damaged ({'; '.join(damaged)}). Nothing was changed; "
        "start a new run with the same settings."
    )


def _common_step(dirs: list[Path]) -> int:
    """The latest intact checkpoint step every run of `dirs` can resume from; CannotResume when one lacks it."""
    from training.runs.checkpoint import checkpoint_steps
    from training.runs.checkpoint_check import first_intact

    own = {d: _check(d) for d in dirs}  # each member's newest intact checkpoint
    step = min(own.values())
    lacking = [
        d.name
        for d in dirs
        if own[d] != step and (step not in checkpoint_steps(d) or first_intact(d, [step])[0] != step)
    ]
    if lacking:
        raise CannotResume(
            f"Cannot resume the population: {', '.join(lacking)} lack an intact checkpoint at step {step}."
        )
    return step


def _restart_at(run_dir: Path, step: int) -> None:
    """Drop the run's metrics past `step` and mark it running again in this process, resumed from `step`."""
    from training.runs.checkpoint import truncate_metrics

    truncate_metrics(run_dir, step)
    run_store.write_status(
        run_dir,
        state="running",
        pid=os.getpid(),
        host=socket.gethostname(),
        ended=None,
        message=None,
        step=step,
        resumed_from=step,
        resumed_at=time.time(),
        final=None,
    )


def resume(
    run_dir: str | Path, wandb_mode: str | None = None, tensorboard: bool | None = None, console: bool = True
) -> list[Outcome]:
    """Continue `run_dir` (and the rest of its population) from the latest common checkpoint.

    Args:
      run_dir: the run directory, or any member of a population.
      wandb_mode: default: the mode the run was started with.
      tensorboard: default: whether the run has a tb/ folder.
      console: show a progress bar.

    Raises:
      CannotResume: not a run, still running, finished, diverged, or without a checkpoint.
    """
    run_dir = Path(run_dir)
    doc = _read_config(run_dir)
    _check_state(run_dir)
    dirs = population_dirs(run_dir, doc)
    step = _common_step(dirs)  # every checkpoint it uses read back whole: nothing is cut before this
    task_cls = load_task(doc.get("task_spec") or doc["task"])
    docs = [_read_config(d) for d in dirs]
    cfgs = [parse_config(task_cls.Config, dd["config"], task_cls.name) for dd in docs]
    previous = run_store.read_status(run_dir).get("wandb") or {}
    if wandb_mode is None:
        wandb_mode = (
            "disabled" if previous.get("mode", "disabled") == "disabled" else previous.get("requested_mode", "auto")
        )
    if tensorboard is None:
        tensorboard = RunFolder(run_dir).has_tensorboard()
    for d in dirs:
        _restart_at(d, step)
    names = [dd.get("name") or d.name for dd, d in zip(docs, dirs, strict=True)]
    tracking = Tracking(wandb_mode, tensorboard, console, group=doc.get("group"))
    return train_members(task_cls, cfgs, dirs, names, tracking, resume_step=step, pbt=pbt_of(doc))


def pbt_of(doc: dict[str, Any]) -> PbtConfig | None:
    """The PBT settings a population was started with (config.json "pbt"), or None."""
    raw = doc.get("pbt")
    if not isinstance(raw, dict):
        return None
    return PbtConfig(**{k: tuple(v) if isinstance(v, list) else v for k, v in raw.items()})
