"""The current run of a script: `jaxdash.init` makes it, module-level `log` / `finish` use it (as wandb's).

`init` takes every argument `wandb.init` takes. The run's project, name, group, job type, tags,
notes and id come from the argument, else a `Settings` field, else the `WANDB_*` variable (see
`jaxdash.init_settings`), and reach our run folder, the page and the W&B copy alike: the W&B copy's id is
the run's id; a W&B `group` is kept as config.json "wandb_group" (never a page population); `tags`
are the script's only. `init` converts the config (as W&B stores it) before any folder exists, then
creates (or resumes) the run folder and builds the writers; `jaxdash.exits` records the end.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from jaxdash import active_run, console_capture, exits, multihost, system_watch
from jaxdash.client import Run
from jaxdash.disabled import DisabledRun
from jaxdash.init_settings import InitArgs, resolve
from jaxdash.notices import notice, termlog
from jaxdash.wandb_config import Config, parse_config
from runstore import run_store, safe_files
from runstore.run_folder import RunFolder

DEFAULT_PROJECT = "uncategorized"  # W&B's project of a run that names none (no project=, no $WANDB_PROJECT)

_RUNS: list[Run] = []  # every run of the process (reinit="create_new" keeps several): each ends at exit


def current() -> Run | DisabledRun | None:
    """The run `init` made last and that has not finished (`jaxdash.active_run`)."""
    return active_run.current()


def init(
    project: str | None = None, name: str | None = None, config: Any = None, group: str | None = None,
    tags: Any = None, notes: str | None = None, runs_root: str | os.PathLike | None = None,
    tensorboard: bool | None = None, wandb: str = "auto", resume: Any = None,
    id: str | None = None, total_steps: int | None = None,  # noqa: A002 - wandb's name for it
    *, entity: str | None = None, dir: str | os.PathLike | None = None, mode: str | None = None,  # noqa: A002
    job_type: str | None = None, reinit: Any = None, settings: Any = None, config_exclude_keys: Any = None,
    config_include_keys: Any = None, allow_val_change: bool | None = None, save_code: bool | None = None,
    sync_tensorboard: bool | None = None, anonymous: Any = None, magic: Any = None, monitor_gym: bool | None = None,
    force: bool | None = None, fork_from: str | None = None, resume_from: str | None = None, **unknown: Any,
) -> Run | DisabledRun:  # fmt: skip
    """Start (or with `resume="allow"` and `id`, continue) a run in `<runs_root>/<id>/` and return it.

    Every `wandb.init` argument is accepted. Ours: runs_root (default $JAXDASH_RUNS, else ~/.local/share/jaxdash/runs),
    wandb (the W&B copy: "auto", "online", "offline" or "disabled"; W&B's `mode` decides it when
    given, and `mode="disabled"` makes a no-op run as in W&B; $WANDB_MODE=disabled only turns the
    W&B copy off: the dashboard still gets the run), tensorboard (event files under the
    run's tb/; default on), total_steps (the page's progress bar and ETA). Raises ValueError for an
    id that is not a plain folder name, an existing id without `resume`, or `resume="must"` of a
    run that does not exist.
    """
    given = {"project": project, "name": name, "group": group, "tags": tags, "notes": notes, "resume": resume,
             "id": id, "entity": entity, "dir": dir, "mode": mode, "job_type": job_type, "reinit": reinit}  # fmt: skip
    args = resolve(given, settings)
    args.console, args.stats_s = console_capture.enabled(settings), system_watch.interval(settings)
    args.runs_root, args.tensorboard, args.wandb = runs_root, tensorboard, wandb
    args.total_steps, args.fork_from = total_steps, fork_from
    _say_unused(dict(anonymous=anonymous, save_code=save_code, magic=magic, monitor_gym=monitor_gym, force=force,
                     sync_tensorboard=sync_tensorboard, fork_from=fork_from, resume_from=resume_from), unknown)  # fmt: skip
    if resume_from and not args.id:
        args.id, args.resume = str(resume_from).split("?", 1)[0], "allow"
    previous = current()
    if previous is not None:
        if args.reinit in (None, False, "default", "return_previous"):
            return previous  # W&B in a script: the active run
        if args.reinit != "create_new":
            previous.finish()
    cfg = Config(parse_config(config, config_include_keys, config_exclude_keys))  # before any folder exists
    if args.mode == "disabled" and "mode" not in args.from_env:  # WANDB_MODE=disabled: only the W&B copy is off
        run: Run | DisabledRun = DisabledRun(cfg.as_dict(), args.name, args.project)
    else:
        run = _start(args, cfg.as_dict())
        _RUNS[:] = [r for r in _RUNS if not r.finished] + [run]
        exits.install(lambda: [r for r in _RUNS if not r.finished])
    if previous is None or args.reinit != "create_new":
        active_run.set_current(run)
    return run


def _say_unused(flags: dict[str, Any], unknown: dict[str, Any]) -> None:
    for key, value in flags.items():
        if value not in (None, False):
            notice(f"init.{key}", f"init({key}=...) has no meaning for a local run; accepted and not used")
    for key in unknown:
        notice(f"init.{key}", f"init() does not know the argument {key!r}; ignored")


def _start(args: InitArgs, cfg: dict[str, Any]) -> Run:
    """Create or resume the run folder, write config and status, build the writers."""
    root, fork_from, total_steps = run_store.runs_root(args.runs_root), args.fork_from, args.total_steps
    job = multihost.job()  # a jax.distributed job of 2+ processes: one run, process 0's
    if job is not None and job.index > 0:
        return job.follow(cfg, root)  # type: ignore[return-value] - a Run's surface, no folder, no writer
    project = args.project or DEFAULT_PROJECT
    run_dir, start_step = _run_dir(root, project, args.name, args.id, args.resume)
    meta = {"name": args.name, "project": project, "entity": args.entity, "group": args.group,
            "job_type": args.job_type, "tags": list(args.tags), "notes": args.notes}  # fmt: skip
    if start_step < 0:
        if fork_from:
            cfg = {**_earlier_config(root / str(fork_from).split("?", 1)[0]), **cfg}
        extra = {k: v for k, v in {"wandb_group": args.group, "job_type": args.job_type, "tags": list(args.tags),
                                   "notes": args.notes, "entity": args.entity, "fork_from": fork_from}.items() if v}  # fmt: skip
        RunFolder(run_dir).write_config(project, cfg, name=args.name, command=list(sys.argv), **extra)
        _seed_notes(run_dir, args)
    else:
        cfg = {**_earlier_config(run_dir), **cfg}
    RunFolder(run_dir).start_status(total_steps or 0)
    if start_step >= 0:
        RunFolder(run_dir).write_status(resumed_from=start_step, resumed_at=time.time())
    # W&B's "Run data is saved locally in ...": the first line says where the dashboard finds the run.
    termlog(f"run data is saved locally in {run_dir} (runs folder {root}; $JAXDASH_RUNS picks another)")
    copy_mode = args.mode if args.wandb == "auto" and args.mode in ("online", "offline") else args.wandb
    tb = True if args.tensorboard is None else bool(args.tensorboard)
    writer = _writers(run_dir, cfg, args, copy_mode, tb, start_step)
    run = (Run if job is None else multihost.LeadRun)(run_dir, cfg, writer, start_step, total_steps or 0, meta)
    if job is not None:
        job.lead(run)
    _watch(run, writer, args, copy_mode, solo=job is None)
    return run


def _watch(run: Run, writer: Any, args: InitArgs, copy_mode: str, solo: bool) -> None:
    """The script's console (output.log and the W&B copy's Logs) and, for a one-process run, its system metrics
    (a multi-host run's come with each host's heartbeat); `Run._end` closes both."""
    if args.console:
        sink = next((w for w in getattr(writer, "writers", []) if hasattr(w, "send_output")), None)
        relay = sink.send_output if sink is not None and copy_mode != "disabled" else None
        run._watches.append(console_capture.ConsoleCapture(run.dir, relay).start())
    if solo and args.stats_s is not None:
        run._watches.append(system_watch.SystemWatch(run._rows.write_system, args.stats_s))


def _earlier_config(run_dir: Path) -> dict[str, Any]:
    doc = RunFolder(run_dir).config({}) or {}
    return dict(doc.get("config") or {}) if isinstance(doc, dict) else {}


def _seed_notes(run_dir: Path, args: InitArgs) -> None:
    """The script's tags and notes on the page (notes.json, which the page edits later)."""
    if args.tags or args.notes:
        from runstore import run_notes

        try:
            run_notes.seed(run_dir, list(args.tags), args.notes or "")
        except OSError as exc:
            notice("notes", f"tags/notes could not be written to {run_dir} ({exc})")


def _run_dir(root: Path, project: str, name: str | None, run_id: str | None, resume: Any) -> tuple[Path, int]:
    """(the run folder, the last step it logged: -1 for a new run)."""
    if run_id is None:
        if resume == "must":
            raise ValueError("jaxdash.init(resume='must') needs the id of the run to continue")
        return run_store.new_run_dir(root, project, name), -1
    if not safe_files.plain_name(run_id):
        raise ValueError(f"jaxdash.init: id {run_id!r} must be a plain folder name (letters, digits, . _ -)")
    run_dir = root / run_id
    if RunFolder(run_dir).has_config():
        if resume not in ("allow", "must", "auto", True):
            raise ValueError(f"jaxdash.init: run {run_id} exists in {root}; pass resume='allow' to continue it")
        steps = [int(r.get("step", 0)) for r in RunFolder(run_dir).records()[0]]
        return run_dir, max(steps, default=0)
    if resume == "must":
        raise ValueError(f"jaxdash.init(resume='must'): no run {run_id} in {root}")
    root.mkdir(parents=True, exist_ok=True)
    run_dir.mkdir(exist_ok=True)
    return run_dir, -1


def _writers(run_dir: Path, cfg: dict[str, Any], args: InitArgs, copy_mode: str, tensorboard: bool,
             start_step: int) -> Any:  # fmt: skip
    """The run's writers: the run store here (written on a background thread, failed writes retried); TensorBoard
    and W&B in a niced writer process (jaxdash/sink.py), whose info (logdir, W&B mode, url, sync command) lands in
    status.json."""
    from jaxdash.sink import SinkWriter
    from runwriters.async_writer import BackgroundWrites
    from runwriters.base import MultiWriter, Tracking
    from runwriters.store import RecordFile, RunStoreWriter
    from runwriters.store_retry import RetryingRecordFile

    RunFolder(run_dir).write_status(wandb={"mode": "disabled", "requested_mode": copy_mode})
    writers: list[Any] = [BackgroundWrites(RunStoreWriter(run_dir, files=RetryingRecordFile(RecordFile(run_dir))))]
    if tensorboard or copy_mode != "disabled":
        # W&B's own variables carry the run's settings to the writer process, whose W&B writer reads
        # them (runwriters/wandb/mode.py); the script's own environment stays as it was.
        wandb_env = {"WANDB_PROJECT": args.project or DEFAULT_PROJECT, "WANDB_TAGS": ",".join(args.tags), "WANDB_NOTES": args.notes,
                     "WANDB_RUN_GROUP": args.group, "WANDB_JOB_TYPE": args.job_type, "WANDB_ENTITY": args.entity,
                     "WANDB_DIR": args.dir, "WANDB_RUN_ID": run_dir.name, **_copy_console_and_stats(args)}  # fmt: skip
        there = Tracking(copy_mode, tensorboard, console=False, run_store=False)  # no job type: W&B would tag it
        publish = lambda found: RunFolder(run_dir).write_status(**found)  # noqa: E731
        resume_step = start_step if start_step >= 0 else None
        opening = {"run_dir": run_dir, "cfg": cfg, "name": args.name, "tracking": there, "resume_step": resume_step}
        writers.append(SinkWriter(opening, publish, wandb_env))
    return MultiWriter(writers)


def _copy_console_and_stats(args: InitArgs) -> dict[str, str | None]:
    """W&B's settings of the copy's console and system monitor: its Logs are the script's output (relayed:
    jaxdash.console_capture), its monitor samples the script's process (x_stats_pid), not the writer process."""
    return {
        "WANDB_CONSOLE": "wrap" if args.console else "off",
        "WANDB_X_STATS_PID": os.environ.get("WANDB_X_STATS_PID") or str(os.getpid()),
        "WANDB_X_DISABLE_STATS": "true" if args.stats_s is None else None,
        "WANDB_X_STATS_SAMPLING_INTERVAL": None if args.stats_s is None else repr(args.stats_s),
    }


def log(data: Mapping[str, Any], step: int | None = None, commit: bool | None = None, sync: bool | None = None) -> None:
    """`run.log` of the current run (as `wandb.log`)."""
    active_run.current_run("log").log(data, step=step, commit=commit)


def define_metric(name: str, step_metric: Any = None, step_sync: bool | None = None, hidden: bool | None = None,
                  summary: str | None = None, goal: str | None = None, overwrite: bool | None = None) -> Any:  # fmt: skip
    """`run.define_metric` of the current run (as `wandb.define_metric`)."""
    return active_run.current_run("define_metric").define_metric(
        name, step_metric, step_sync, hidden, summary, goal, overwrite
    )


def finish(exit_code: int | None = None, quiet: bool | None = None) -> None:
    """`run.finish` of the current run, if any (as `wandb.finish`)."""
    run = current()
    if run is not None:
        run.finish(exit_code)
