"""The current run of a script: `jaxdash.init` makes it, module-level `log` / `finish` use it (as wandb's).

`init` creates (or resumes) the run folder, writes config and status, builds the writers (the run
store here, TensorBoard and W&B in the writer process) and hooks the script's end: an uncaught
exception records "failed" with its last line, a normal exit "finished", Ctrl-C "stopped".
"""

from __future__ import annotations

import atexit
import os
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from jaxdash.client import Run, _one_line
from runstore import run_store, safe_files

_CURRENT: Run | None = None


def current() -> Run | None:
    """The run `init` made last and that has not finished."""
    return _CURRENT if _CURRENT is not None and not _CURRENT.finished else None


def init(
    project: str | None = None,
    name: str | None = None,
    config: Mapping[str, Any] | None = None,
    group: str | None = None,
    tags: tuple[str, ...] | list[str] = (),
    notes: str | None = None,
    runs_root: str | os.PathLike | None = None,
    tensorboard: bool = True,
    wandb: str = "auto",
    resume: str | None = None,
    id: str | None = None,  # noqa: A002 - wandb's name for it
    total_steps: int | None = None,
) -> Run:
    """Start (or with `resume="allow"` and `id`, continue) a run in `<runs_root>/<id>/` and return it.

    runs_root: default $JAXDASH_RUNS, else ./runs (where the dashboard looks). wandb: "auto"
    (online when logged in, else offline), "online", "offline" or "disabled". total_steps: for the
    page's progress bar and ETA. Raises ValueError for an id that is not a plain folder name, an
    existing id without `resume`, or `resume="must"` of a run that does not exist.
    """
    global _CURRENT
    if current() is not None:
        _CURRENT.finish()
    run_dir, start_step = _run_dir(run_store.runs_root(runs_root), project or "script", name, id, resume)
    cfg = dict(config or {})
    if start_step < 0:
        extra = {"group": group} if group else {}
        run_store.write_config(run_dir, project or "script", cfg, name=name, command=list(sys.argv), **extra)
    else:
        cfg = {**(run_store.read_json(run_dir / "config.json", {}) or {}).get("config", {}), **cfg}
    run_store.start_status(run_dir, total_steps or 0, **({"group": group} if group else {}))
    if start_step >= 0:
        run_store.write_status(run_dir, resumed_from=start_step, resumed_at=time.time())
    writer = _writers(run_dir, cfg, name, wandb, tensorboard, start_step, group, project, tags, notes)
    _CURRENT = Run(run_dir, name or run_dir.name, cfg, writer, start_step, total_steps or 0)
    _install_hooks()
    return _CURRENT


def _run_dir(root: Path, project: str, name: str | None, run_id: str | None, resume: str | None) -> tuple[Path, int]:
    """(the run folder, the last step it logged: -1 for a new run)."""
    if run_id is None:
        if resume == "must":
            raise ValueError("jaxdash.init(resume='must') needs the id of the run to continue")
        return run_store.new_run_dir(root, project, name), -1
    if not safe_files.plain_name(run_id):
        raise ValueError(f"jaxdash.init: id {run_id!r} must be a plain folder name (letters, digits, . _ -)")
    run_dir = root / run_id
    if (run_dir / "config.json").exists():
        if resume not in ("allow", "must", True):
            raise ValueError(f"jaxdash.init: run {run_id} exists in {root}; pass resume='allow' to continue it")
        steps = [int(r.get("step", 0)) for r in run_store.read_metrics(run_dir)[0]]
        return run_dir, max(steps, default=0)
    if resume == "must":
        raise ValueError(f"jaxdash.init(resume='must'): no run {run_id} in {root}")
    run_dir.mkdir(parents=True, exist_ok=True)
    return run_dir, -1


def _writers(run_dir, cfg, name, wandb, tensorboard, start_step, group, project, tags, notes) -> Any:  # noqa: ANN001
    """The run's writers: the run store here; TensorBoard and W&B in a niced writer process (jaxdash/sink.py).

    Their info (TensorBoard logdir, W&B mode, url and sync command) is published in status.json.
    """
    from jaxdash.sink import SinkWriter
    from training.writers.base import MultiWriter, Tracking
    from training.writers.build import build_writer

    # What the W&B writer reads, for the writer process only (the script's own environment wins and
    # stays as it was: a later `wandb.init` of the script is not steered by this run's project).
    wandb_env = {"WANDB_PROJECT": project, "WANDB_TAGS": ",".join(tags), "WANDB_NOTES": notes}
    resume_step = start_step if start_step >= 0 else None
    here = Tracking("disabled", tensorboard=False, console=False, group=group, job_type=project)
    writer, info = build_writer(run_dir, cfg, name=name, tracking=here, resume_step=resume_step)
    run_store.write_status(run_dir, **info)
    if tensorboard or wandb != "disabled":
        there = Tracking(wandb, tensorboard, console=False, group=group, job_type=project, run_store=False)
        publish = lambda found: run_store.write_status(run_dir, **found)  # noqa: E731
        writer = MultiWriter([*writer.writers, SinkWriter(run_dir, cfg, name, there, resume_step, publish, wandb_env)])
    if start_step < 0:
        writer.write_hparams(cfg)
    return writer


_HOOKED = False


def _install_hooks() -> None:
    """Record the end of the run however the script ends: normally (atexit) or by an uncaught exception."""
    global _HOOKED
    if _HOOKED:
        return
    _HOOKED = True
    previous = sys.excepthook

    def on_uncaught(kind: type[BaseException], exc: BaseException, tb: Any) -> None:
        if current() is not None:
            if isinstance(exc, KeyboardInterrupt):
                _CURRENT._stopped = True
                _CURRENT.finish(0)
            else:
                _CURRENT.finish(1, _one_line(exc))
        previous(kind, exc, tb)

    sys.excepthook = on_uncaught
    atexit.register(lambda: _CURRENT.finish() if current() is not None else None)


def log(metrics: Mapping[str, Any], step: int | None = None, commit: bool = True) -> None:
    """`run.log` of the current run (as `wandb.log`)."""
    if current() is None:
        raise RuntimeError("jaxdash.log() before jaxdash.init()")
    _CURRENT.log(metrics, step=step, commit=commit)


def define_metric(name: str, step_metric: str | None = None, summary: str | None = None) -> None:
    """`run.define_metric` of the current run (as `wandb.define_metric`)."""
    if current() is None:
        raise RuntimeError("jaxdash.define_metric() before jaxdash.init()")
    _CURRENT.define_metric(name, step_metric=step_metric, summary=summary)


def finish(exit_code: int = 0) -> None:
    """`run.finish` of the current run, if any (as `wandb.finish`)."""
    if current() is not None:
        _CURRENT.finish(exit_code)
