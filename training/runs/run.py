"""Run a task into run directories: one run, or a population of K members trained by one program.

`execute` creates the run directories (config.json, status.json), opens each member's writers,
runs the engine and records each member's end. `resume` continues a stopped or crashed run from
its latest checkpoint; a population member resumes with its whole population.
"""

from __future__ import annotations

import dataclasses
import secrets
import shutil
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runstore import run_store
from runstore.run_folder import RunFolder
from runwriters.base import DEFAULT_TRACKING, MetricWriter, Tracking
from settings.fields import config_to_dict, parse_config
from settings.registry import canonical_spec
from training.engine import distributed
from training.engine.members import Member, Members
from training.engine.pbt import PbtConfig
from training.engine.result import TrainResult
from training.runs.lifecycle import StopFlag, failure
from training.tasks import load_task
from training.tasks.base import Task

Outcome = tuple[Path, str, TrainResult | None]  # (run dir, final state, result or None)


# A job's process k > 0: no TensorBoard, no W&B, no progress bar, no run store (its scratch folder only).
FOLLOWER = Tracking(wandb_mode="disabled", tensorboard=False, console=False, run_store=False)

RUN_FACTS = ("task", "group", "member", "pbt")  # config.json fields W&B config and HParams show too


def open_writer(run_dir: Path, cfg: Any, name: str, tracking: Tracking, resume_step: int | None) -> MetricWriter:
    """Build a run's writers and publish their info (W&B mode/url, TB logdir) in status.json.

    W&B's config and TensorBoard's HParams get the settings and the run's facts: its task, and a
    population member's group, index and PBT settings.
    """
    from runwriters.build import build_writer

    doc = RunFolder(run_dir).config({})
    facts = {k: doc[k] for k in RUN_FACTS if isinstance(doc, dict) and doc.get(k) is not None}
    settings = {**config_to_dict(cfg), **facts}
    writer, info = build_writer(run_dir, settings, name=name, tracking=tracking, resume_step=resume_step)
    RunFolder(run_dir).write_status(**info)
    if resume_step is None:
        writer.write_hparams(settings)
    return writer


@dataclass(frozen=True)
class NewRuns:
    """Where `execute` creates its run folders and what it names them.

    axes: the fields a population varies (its members' names); empty for a single run.
    run_dir: a single run's folder, or member 0's in a population (default: a new one under `root`).
    root: the runs root (default $JAXDASH_RUNS, else the per-user folder of `run_store.default_runs_root`).
    name: display name (a population's members get "<name> #i (lr=...)").
    command: the command line, saved in config.json.
    """

    axes: Sequence[str] = ()
    run_dir: Path | None = None
    root: Any = None
    name: str | None = None
    command: list[str] | None = None


@dataclass(frozen=True)
class MemberRuns:
    """What one engine run trains: the task, each member's config, run folder and display name, how it writes."""

    task_cls: type[Task]
    cfgs: Sequence[Any]
    dirs: Sequence[Path]
    names: Sequence[str]
    tracking: Tracking
    pbt: PbtConfig | None = None


def _member_name(name: str | None, group: str, i: int, cfg: Any, axes: Sequence[str]) -> str:
    label = " ".join(f"{a}={getattr(cfg, a):g}" for a in axes)
    return f"{name or group} #{i} ({label})"


def create_runs(
    task_spec: str, task_cls: type[Task], cfgs: Sequence[Any], runs: NewRuns, pbt: PbtConfig | None = None
) -> tuple[list[Path], list[str], str | None]:
    """The members' new run directories with config.json and a "running" status.json; (dirs, names, group)."""
    task, axes, name, run_dir = task_cls.name, runs.axes, runs.name, runs.run_dir
    group = None
    if axes:
        group = f"{time.strftime('%Y%m%d-%H%M%S')}-{run_store.slugify(name or task)}-pop-{secrets.token_hex(2)}"
    dirs, names = [], []
    for i, cfg in enumerate(cfgs):
        if run_dir is not None and i == 0:  # one run's folder, or the page's launch folder holding member 0
            d = Path(run_dir)
            d.mkdir(parents=True, exist_ok=True)
        else:
            d = run_store.new_run_dir(runs.root, task, name if group is None else f"{name or task}-m{i}")
        if group is None:
            extra: dict[str, Any] = {}
            names.append(name or d.name)
        else:
            extra = {"group": group, "member": i, **({"pbt": dataclasses.asdict(pbt)} if pbt else {})}
            names.append(_member_name(name, group, i, cfg, axes))
        total = getattr(cfg, "steps", 0) or getattr(cfg, "epochs", 0) * (
            getattr(cfg, "train_size", 0) // getattr(cfg, "batch_size", 1)
        )
        RunFolder(d).write_config(
            task,
            config_to_dict(cfg),
            name=names[-1],
            command=runs.command,
            task_spec=task_spec,
            panels=list(task_cls.panels),
            **extra,
        )
        RunFolder(d).start_status(
            total_steps=total, epoch=0, total_epochs=getattr(cfg, "epochs", 0), phase="starting", **extra
        )
        dirs.append(d)
    return dirs, names, group


def train_members(
    runs: MemberRuns,
    resume_step: int | None = None,
    stop: StopFlag | None = None,
    ckpt_dirs: Sequence[Path] | None = None,
) -> list[Outcome]:
    """Writers, stop flag and checkpoints around one engine run; each member's end recorded.

    `resume_step`: the checkpoint step the members continue from (None: a new run).
    `stop`: a flag installed before the run folders were made (a SIGTERM in between then stops the
    run cleanly instead of killing it with a "running" status.json).
    `ckpt_dirs`: where the members' checkpoints are (default: `runs.dirs`); a resumed job's process k > 0
    writes into scratch `runs.dirs` and restores the run's own checkpoints (Orbax writes them from process 0).
    """
    from training.engine.loop import Engine
    from training.runs.checkpoint import Checkpointer
    from training.runs.job_watch import JobWatch

    task_cls, cfgs, dirs, tracking = runs.task_cls, runs.cfgs, runs.dirs, runs.tracking
    for d in dirs:
        RunFolder(d).clear_stop()
    if stop is None:
        stop = StopFlag(dirs)
        stop.install()
    stop.run_dirs = [Path(d) for d in dirs]
    members = Members([])
    results: list[TrainResult | None] = [None] * len(cfgs)
    ckpt_dirs = list(ckpt_dirs) if ckpt_dirs is not None else list(dirs)
    watch = JobWatch(dirs)  # a job's hosts: heartbeats to process 0, a lost one named (nothing in one process)
    try:
        for i, (cfg, d, n) in enumerate(zip(cfgs, dirs, runs.names, strict=True)):
            member_tracking = dataclasses.replace(  # one progress bar: member 0's
                tracking,
                console=tracking.console and i == 0,
                job_type=task_cls.name,
                member=i if tracking.group is not None else None,
            )
            writer = open_writer(d, cfg, n, member_tracking, resume_step)
            members.members.append(Member(d, writer, cfg.lr))
            members.members[-1].ckpt = Checkpointer(ckpt_dirs[i], resume_step=resume_step)
        trained = Engine(task_cls, cfgs, members, stop, pbt=runs.pbt).run(resume_step)
        watch.end(trained[0].state, trained[0].extra.get("message"))
        for i in members.alive():
            results[i] = trained[i]
            members.writer(i).write_summary(trained[i].final)
            # which final numbers are no last value, and a job's devices (all processes'): in the end's one write
            fields = {key: trained[i].extra.get(key) for key in ("final_basis", "devices")}
            members.end(i, trained[i].state, None, trained[i].final, fields)
    except (Exception, KeyboardInterrupt) as exc:  # noqa: BLE001 - every live member records the failure
        state, message = watch.verdict() or failure(exc, dirs[0])  # a lost host is why, not its symptom
        watch.end(state, message)
        for i in members.alive():
            members.end(i, state, message)
        for d in dirs[len(members) :]:  # writers never opened: record the failure all the same
            RunFolder(d).write_status(state=state, message=message, ended=time.time())
    watch.close()
    states = [m.state for m in members.members] + ["failed"] * (len(dirs) - len(members))
    return list(zip(dirs, states, results, strict=True))


def execute(
    task: str,
    raw_cfgs: Sequence[dict[str, Any]] | Sequence[Any],
    runs: NewRuns = NewRuns(),
    *,
    tracking: Tracking = DEFAULT_TRACKING,
    pbt: PbtConfig | None = None,
    job: distributed.JobFlags | None = None,
) -> list[Outcome]:
    """Train a task into new run directories: one run, or a population when `runs.axes` names the varied fields.

    Args:
      task: a task name or "module:Class" spec (see training.tasks).
      raw_cfgs: one config per member, as raw dicts (validated here) or configs.
      runs: where the run folders go and what they are named (`NewRuns`; default: a new folder under
        the runs root).
      tracking: where the runs log besides the run store: W&B mode, TensorBoard, the progress bar (member 0).
      pbt: population-based training settings (a population varying lr only).
      job: the `jax.distributed` job to join (the CLI's --coordinator ...; default: the JAX_* variables).

    Returns:
      [(run_dir, final state, result or None)] per member.
    """
    distributed.join(distributed.from_env(job))  # a jax.distributed job: before JAX's backend starts
    if not distributed.is_lead():  # process k > 0 trains the same run and writes nothing of it
        scratch, tracking = Path(tempfile.mkdtemp(prefix="jaxdash-follower-")), FOLLOWER
        # a population's other members: beside it, not in the shared runs root
        runs = dataclasses.replace(runs, run_dir=scratch, root=scratch / "members")
    task_cls = load_task(task)
    cfgs = [c if isinstance(c, task_cls.Config) else parse_config(task_cls.Config, c, task_cls.name) for c in raw_cfgs]
    if pbt is not None:
        pbt.validate(len(cfgs) if runs.axes else 1)
        lrs = [c.lr for c in cfgs]
        pbt = dataclasses.replace(pbt, lr_range=(min(lrs), max(lrs)))
    stop = StopFlag([])
    stop.install()  # before status.json says "running" with this pid
    dirs, names, group = create_runs(canonical_spec(task), task_cls, cfgs, runs, pbt)
    tracking = dataclasses.replace(tracking, group=group)
    outcomes = train_members(MemberRuns(task_cls, cfgs, dirs, names, tracking, pbt), stop=stop)
    if not distributed.is_lead():
        shutil.rmtree(dirs[0], ignore_errors=True)  # the follower's scratch folder: process 0 holds the run
    return outcomes
