"""Continue a stopped, crashed or failed run from its latest checkpoint (`python -m training resume DIR`).

metrics.jsonl loses the records past the checkpoint step (they are logged again, identically),
TensorBoard purges its events past it, and W&B continues the same run id. A population member
resumes with every resumable member of its population, as one program again.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import socket
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runstore import run_states
from runstore.run_folder import RunFolder
from runwriters.base import Tracking
from settings.fields import parse_config
from training.engine import distributed
from training.engine.distributed import JobFlags
from training.engine.pbt import PbtConfig
from training.errors import CannotResume
from training.runs.run import FOLLOWER, MemberRuns, Outcome, train_members
from training.tasks import load_task

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
            if RunFolder(d).status().get("state") not in run_states.NOT_RESUMED:
                found.append((int(other.get("member", 0)), d))
    return [d for _, d in sorted(found)]


def _check_state(run_dir: Path) -> None:
    """CannotResume when the run's state forbids resuming (running, finished, diverged)."""
    state = RunFolder(run_dir).status().get("state")
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
    RunFolder(run_dir).write_status(
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


@dataclass
class _Plan:
    """What a resume trains (the members' run dirs, configs and names, and how they write) and from which step."""

    runs: MemberRuns
    step: int | None  # the checkpoint (process 0 of a job, or one process); None where not looked for


def _plan(run_dir: Path, wandb_mode: str | None, tensorboard: bool | None, console: bool, find_step: bool) -> _Plan:
    """Read the run (nothing is changed): its population, configs, writers' modes and, with `find_step`, its checkpoint."""
    doc = _read_config(run_dir)
    _check_state(run_dir)
    dirs = population_dirs(run_dir, doc)
    step = _common_step(dirs) if find_step else None  # every checkpoint it uses read back whole
    task_cls = load_task(doc.get("task_spec") or doc["task"])
    docs = [_read_config(d) for d in dirs]
    cfgs = [parse_config(task_cls.Config, dd["config"], task_cls.name) for dd in docs]
    previous = RunFolder(run_dir).status().get("wandb") or {}
    if wandb_mode is None:
        wandb_mode = (
            "disabled" if previous.get("mode", "disabled") == "disabled" else previous.get("requested_mode", "auto")
        )
    if tensorboard is None:
        tensorboard = RunFolder(run_dir).has_tensorboard()
    names = [dd.get("name") or d.name for dd, d in zip(docs, dirs, strict=True)]
    tracking = Tracking(wandb_mode, tensorboard, console, group=doc.get("group"))
    return _Plan(MemberRuns(task_cls, cfgs, dirs, names, tracking, pbt_of(doc)), step)


def resume(
    run_dir: str | Path,
    wandb_mode: str | None = None,
    tensorboard: bool | None = None,
    console: bool = True,
    job: JobFlags | None = None,
) -> list[Outcome]:
    """Continue `run_dir` (and the rest of its population) from the latest common checkpoint.

    Args:
      run_dir: the run directory, or any member of a population.
      wandb_mode: default: the mode the run was started with.
      tensorboard: default: whether the run has a tb/ folder.
      console: show a progress bar.
      job: the `jax.distributed` job every process of which resumes the run (default: the JAX_*
        variables); see `_resume_job`.

    Raises:
      CannotResume: not a run, still running, finished, diverged, or without a checkpoint.
    """
    distributed.join(distributed.from_env(job))  # before JAX's backend starts
    run_dir = Path(run_dir)
    if distributed.count() > 1:
        return _resume_job(run_dir, wandb_mode, tensorboard, console)
    plan = _plan(run_dir, wandb_mode, tensorboard, console, find_step=True)
    for d in plan.runs.dirs:
        _restart_at(d, plan.step)
    return train_members(plan.runs, resume_step=plan.step)


def _resume_job(run_dir: Path, wandb_mode: str | None, tensorboard: bool | None, console: bool) -> list[Outcome]:
    """Every process of a job resumes the run: process 0 as one process does; the others restore the same
    checkpoints from the runs root (a shared filesystem) and train into a scratch folder.

    Each process reads the run before process 0 changes anything, then all agree (two collectives):
    first on the step (or that one process cannot read the run: all end with one message), then
    that process 0 deleted the checkpoints past it, before any process's Orbax manager lists them.
    """
    lead = distributed.is_lead()
    plan, problem = None, None
    try:
        plan = _plan(run_dir, wandb_mode, tensorboard, console, find_step=lead)
    except Exception as exc:  # noqa: BLE001 - raised below, once every process heard of it
        problem = exc
    answers = distributed.gathered(-1 if plan is None else plan.step if lead else 0)
    if problem is not None:
        raise problem
    if -1 in answers:
        k = answers.index(-1)
        raise CannotResume(
            f"Cannot resume {run_dir.name}: process 0 refused it (its error says why)."
            if k == 0
            else f"Cannot resume {run_dir.name}: process {k} cannot read it; the runs root must be one shared "
            "folder, at the same path in every process."
        )
    step = answers[0]
    if lead:
        _drop_checkpoints_after(list(plan.runs.dirs), step)
        for d in plan.runs.dirs:
            _restart_at(d, step)
    distributed.gathered(0)  # sync point: process 0 has dropped the checkpoints past `step`
    if lead:
        return train_members(plan.runs, resume_step=step)
    scratch = Path(tempfile.mkdtemp(prefix="jaxdash-follower-"))
    own = [scratch / str(i) for i in range(len(plan.runs.dirs))]
    for d in own:
        d.mkdir()
    try:
        tracking = dataclasses.replace(FOLLOWER, group=plan.runs.tracking.group)
        outcomes = train_members(
            dataclasses.replace(plan.runs, dirs=own, tracking=tracking), resume_step=step, ckpt_dirs=plan.runs.dirs
        )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return [(d, state, result) for d, (_, state, result) in zip(plan.runs.dirs, outcomes, strict=True)]


def _drop_checkpoints_after(dirs: list[Path], step: int) -> None:
    """Delete the checkpoints past `step` (ahead of the kept metrics) before a job's Orbax managers open.

    Each process's manager deletes such steps itself otherwise, with a barrier per step: a process
    listing the folder after process 0 deleted one would skip that barrier and the job would hang.
    """
    for d in dirs:
        ckpt = RunFolder(d).checkpoints
        for p in ckpt.iterdir() if ckpt.is_dir() else []:
            if p.name.isdigit() and int(p.name) > step:
                shutil.rmtree(p, ignore_errors=True)


def pbt_of(doc: dict[str, Any]) -> PbtConfig | None:
    """The PBT settings a population was started with (config.json "pbt"), or None."""
    raw = doc.get("pbt")
    if not isinstance(raw, dict):
        return None
    return PbtConfig(**{k: tuple(v) if isinstance(v, list) else v for k, v in raw.items()})
