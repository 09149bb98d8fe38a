"""Start and stop training runs as their own processes (TensorBoard: dashboard/processes/tensorboard_server.py).

No Streamlit here: pages call these functions and cache what they return.
A run started here is exactly a CLI run (`python -m training ...`), so the run
directory is the only thing the page and the process share. Until the process
has written its config.json, `launch.json` (pid, command) lets any page or tab
see that the run is starting, or that it failed to start. Runs start in the
warm worker when one is ready (dashboard/processes/warm_workers.py), else as a fresh process.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dashboard.processes import page_queue
from dashboard.processes import warm_workers as worker
from runstore import launch_files, run_store, safe_files
from runstore.run_folder import RunFolder
from runwriters.wandb.mode import MODES as WANDB_MODES
from settings.fields import config_to_dict, fields
from settings.queue import store as queue_store
from settings.registry import task_settings
from settings.task import TaskSettings

REPO_ROOT = worker.REPO_ROOT
log = logging.getLogger(__name__)


def cli_task(task: str) -> str:
    """The task argument of the CLI for `task` (a name or "module:Class" spec).

    A spec naming a Python file by a relative path is made absolute: the training process runs
    from the repository root, which need not be where the page found the file.
    """
    module, sep, cls = task.partition(":")
    if sep and (module.endswith(".py") or "/" in module):
        return f"{Path(module).resolve()}:{cls}"
    return task


def config_flags(cfg: Any) -> list[str]:
    """One `--field value` pair per config field (the CLI's own flags), lists comma-joined.

    A None value is passed as "none" where the field's default is not None, else left out.
    """
    defaults = {f.name: f.default for f in fields(type(cfg))}
    flags: list[str] = []
    for key, value in config_to_dict(cfg).items():
        if value is None:
            if defaults.get(key) is None:
                continue
            value = "none"
        elif isinstance(value, (list, tuple)):
            value = ",".join(str(v) for v in value)
        flags += [f"--{key.replace('_', '-')}", str(value)]
    return flags


@dataclass(frozen=True)
class Population:
    """What makes a launch a population: one member per combination of `axes`' values, trained together.

    axes: the varied fields' values, e.g. {"lr": ["0.001", "0.01"], "seed": ["0", "1"]}.
    pbt: PBT's settings ({"interval": 100, "metric": ..., "fraction": ..., "resample": ...}), or None.
    root: where the members' folders go (None: the runs root).
    """

    axes: Mapping[str, Sequence[str]]
    pbt: Mapping[str, Any] | None = None
    root: Path | None = None


def build_command(
    task: str,
    cfg: Any,
    run_dir: Path | None,
    name: str | None,
    wandb_mode: str = "auto",
    population: Population | None = None,
) -> list[str]:
    """The exact CLI command that trains `cfg` of `task` (a name or "module:Class" spec) into `run_dir`.

    With a `population` it trains one run per combination of its axes (with PBT when it has `pbt`): member 0
    in `run_dir` (the launch folder, when given), the others in new directories under its root.
    """
    flags = config_flags(cfg)
    where = []
    if population is not None:
        for axis, values in population.axes.items():
            flags += ["--population", f"{axis}={','.join(str(v) for v in values)}"]
        for key, value in (population.pbt or {}).items():
            flags += [f"--pbt-{key}", f"{value:g}" if isinstance(value, float) else str(value)]
        where = ["--runs-root", str(population.root or run_store.runs_root())]
    where += ["--run-dir", str(run_dir)] if run_dir is not None else []  # a population's: member 0's folder
    cmd = [sys.executable, "-m", "training", cli_task(task), *flags, *where, "--wandb", wandb_mode, "--quiet"]
    if name:
        cmd += ["--name", name]
    return cmd


def spawn(cmd: list[str], log_path: Path, metrics: Path | None = None) -> dict[str, Any]:
    """Start `cmd` (a `python -m training ...` command) through the run queue (dashboard/processes/page_queue.py).

    At once while fewer than the queue's limit train, else when a slot frees up; either way by
    `start_now`. Returns launch.json's process fields: "pid" and "via" once started, "queue_job".
    """
    return page_queue.start(cmd, log_path, metrics, start_now)


def start_now(cmd: list[str], log_path: Path, metrics: Path | None = None) -> tuple[int, str]:
    """Run `cmd` as its own process now, output appended to `log_path`; (pid, "worker" or "cold").

    The warm worker takes it when one is ready and fits the current environment; else a
    fresh process starts. Either way it outlives the page (own session) and runs from the
    repository root. The next worker starts once `metrics` (the run's metrics.jsonl) changed,
    so its imports do not slow down the run's first steps.
    """
    env = worker.job_env()
    since = time.time()

    def settled() -> bool:
        return metrics is not None and metrics.exists() and metrics.stat().st_mtime > since

    os.close(safe_files.open_append(log_path))  # made here, never through a link: UnsafePath if one is planted
    w = worker.pool().take(env, settled) if worker.enabled() else None
    if w is not None:
        try:
            w.submit(cmd[3:], log_path, env, REPO_ROOT)
            return _reaped(w.proc), "worker"
        except OSError:
            log.warning("warm worker %s died before its job; starting the run cold", w.proc.pid)
    with os.fdopen(safe_files.open_append(log_path), "ab") as out:
        proc = subprocess.Popen(
            cmd,
            cwd=REPO_ROOT,
            env=worker.child_env(),  # $JAXDASH_NICE: below the page's priority
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    return _reaped(proc), "cold"


def _reaped(proc: subprocess.Popen) -> int:
    """`proc`'s pid, with a thread that waits for its exit: a run started here never stays a zombie under
    the server. The run queue reads its exit code from the same Popen (`queue_store.adopt`)."""
    queue_store.adopt(proc)
    threading.Thread(target=proc.wait, name=f"reap-{proc.pid}", daemon=True).start()
    return proc.pid


def _check_wandb(wandb_mode: str) -> None:
    if wandb_mode not in WANDB_MODES:
        raise ValueError(f"W&B mode must be one of {', '.join(WANDB_MODES)} (got {wandb_mode!r}).")


def _launch_record(task: str, task_cls: TaskSettings, cmd: list[str], process: dict, launched: float) -> dict:
    """launch.json's common fields: enough for the pages to show the run before its config.json exists.

    `process` is `spawn`'s: the pid and how it started, or the queue job it waits as.
    """
    return {
        **process,
        "command": cmd,
        "launched": launched,
        "task": task_cls.name or task,
        "task_spec": task,
        "panels": list(task_cls.panels),
    }


def launch(task: str, cfg: Any, name: str | None = None, wandb_mode: str = "auto", root: Path | None = None) -> Path:
    """Start `cfg` of `task` (a name or spec, see training.tasks) as a detached training process.

    Returns its run directory; the process writes stdout/stderr to process.log there.
    """
    _check_wandb(wandb_mode)
    task_cls = task_settings(task)  # names and panels only: the page imports no JAX
    run_dir = run_store.new_run_dir(root or run_store.runs_root(), task_cls.name or "task", name)
    cmd = build_command(task, cfg, run_dir, name, wandb_mode)
    launched = time.time()
    process = spawn(cmd, launch_files.process_log(run_dir), RunFolder(run_dir).records_path)
    record = _launch_record(task, task_cls, cmd, process, launched)
    launch_files.write_launch(run_dir, {**record, "name": name or run_dir.name})
    return run_dir


def launch_population(task: str, cfg: Any, population: Population, name: str | None = None, wandb_mode: str = "auto",
                      ) -> Path:  # fmt: skip
    """Start a population of `task` (one process training every combination of its axes); returns its launch
    directory.

    The page makes member 0's folder (launch.json with "population", process.log): it stands for
    the population until the process writes its members, member 0 into that same folder (so no
    launch folder is left behind) and the others beside it; `launch_status.population_members` finds
    them by pid.
    """
    _check_wandb(wandb_mode)
    task_cls = task_settings(task)
    short = task_cls.name or "task"
    population = dataclasses.replace(population, root=population.root or run_store.runs_root())
    launch_dir = run_store.new_run_dir(population.root, short, f"{name or short}-m0")  # becomes member 0's folder
    cmd = build_command(task, cfg, launch_dir, name, wandb_mode, population)
    axes = population.axes
    launched = time.time()
    process = spawn(cmd, launch_files.process_log(launch_dir))
    record = _launch_record(task, task_cls, cmd, process, launched)
    population = {k: list(v) for k, v in axes.items()}
    members = math.prod(len(v) for v in axes.values())
    launch_files.write_launch(
        launch_dir,
        {**record, "name": name or f"{short} population", "population": population, "members": members},
    )
    return launch_dir


def has_checkpoint(run_dir: Path) -> bool:
    """Whether the run has a complete checkpoint (Orbax renames a finished save to its step number)."""
    return RunFolder(run_dir).has_checkpoint()


def resume(run_dir: Path) -> int | None:
    """Continue a stopped or crashed run from its latest checkpoint in a new process; returns its pid.

    `python -m training resume <run_dir>` keeps the run's W&B mode and TensorBoard choice. Its
    output is appended to process.log; launch.json records the launch under "resume" so the page
    shows the run as starting until the process takes over status.json. Returns its pid, or None
    while it waits in the run queue.
    """
    run_dir = Path(run_dir)
    cmd = [sys.executable, "-m", "training", "resume", str(run_dir), "--quiet"]
    launched = time.time()
    process = spawn(cmd, launch_files.process_log(run_dir), RunFolder(run_dir).records_path)
    info = launch_files.launch_info(run_dir)
    info["resume"] = {**process, "command": cmd, "launched": launched}
    launch_files.write_launch(run_dir, info)
    return process.get("pid")


STOP_FILE_ONLY = (
    "Asked the run to stop (its stop file). No process was signalled: none could be verified as this "
    "run's own training process here, so it stops at its next check, if it is running at all."
)


def stop(run_dir: Path) -> bool:
    """Ask a run to stop cleanly: the stop file, plus SIGTERM to its process if that is verifiably its own.

    The run finishes its chunk and ends "stopped" either way (it checks the stop file between
    chunks); a population member stops its whole population (one process). A pid is signalled
    only if `run_store.owns_process` verifies it (alive, this host, this run's training process,
    not a reused pid). Returns True if a process was signalled, False if only the stop file was written.
    """
    run_dir = Path(run_dir)
    RunFolder(run_dir).request_stop()
    info = launch_files.launch_info(run_dir)
    if page_queue.cancel(info) or page_queue.cancel(info.get("resume") or {}):
        return False  # it was still waiting in the run queue: it never starts
    for claim in (RunFolder(run_dir).status(), info.get("resume") or {}, info):
        if run_store.owns_process(claim, run_dir):
            try:
                os.kill(int(claim["pid"]), signal.SIGTERM)
            except (ProcessLookupError, PermissionError):
                return False
            return True
    return False
