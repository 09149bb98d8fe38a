"""The command line's parsers and commands; every task flag comes from the task's config metadata.

    python -m training regression --lr 0.01 --steps 2000
    python -m training mnist --dataset fashion_mnist --population lr=0.0003,0.001,0.003
    python -m training examples/sine.py:SineTask --hidden 64     # any Task subclass, by spec
    python -m training resume runs/<id>

Every config field is a flag (`--batch-size 64`, also `--batch_size=64` as W&B Sweeps agents pass it).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from runstore import run_folder, run_states, run_store
from runstore.run_folder import RunFolder
from runwriters.wandb.mode import MODES as WANDB_MODES
from settings.fields import FieldInfo, fields
from settings.population import MAX_MEMBERS
from settings.registry import available

PAGE_FILES = (run_folder.LAUNCH, run_folder.LOG)  # what a page-launched run dir holds before its process starts
EXIT_CODES = run_states.EXIT_CODES


def _default_text(f: FieldInfo) -> str:
    if f.default is None:
        return "all" if f.kind.startswith("int") else "none"
    return ",".join(map(str, f.default)) if isinstance(f.default, tuple) else str(f.default)


def _field_help(f: FieldInfo) -> str:
    bounds = []
    if f.min is not None:
        bounds.append(f"{'>' if f.min_exclusive else '>='} {f.min:g}")
    if f.max is not None:
        bounds.append(f"<= {f.max:g}")
    extra = f"; {', '.join(bounds)}" if bounds else ""
    help_ = f" {f.help}" if f.help else ""
    return f"{f.label}.{help_} (default: {_default_text(f)}{extra})".replace("%", "%%")


def task_parser(task: str, task_cls: type) -> argparse.ArgumentParser:
    """A parser with one flag per config field of `task_cls`, plus the run options."""
    p = argparse.ArgumentParser(prog=f"python -m training {task}", description=task_cls.title or task_cls.__doc__)
    settings = p.add_argument_group("settings")
    for f in fields(task_cls.Config):
        flags = dict.fromkeys([f"--{f.name.replace('_', '-')}", f"--{f.name}"])
        choices = [str(c) for c in f.choices] if f.choices else None
        settings.add_argument(
            *flags,
            dest=f.name,
            default=None,
            choices=choices,
            metavar=f.name.upper() if not choices else None,
            help=_field_help(f),
        )
    p.add_argument(
        "--run-dir",
        type=Path,
        default=None,
        help="write the run here (a new or empty folder); with --population, member 0 (the others go beside it)",
    )
    p.add_argument(
        "--runs-root",
        type=Path,
        default=None,
        help="root of run directories (default: $JAXDASH_RUNS, else ~/.local/share/jaxdash/runs)",
    )
    p.add_argument("--name", default=None, help="display name of the run")
    p.add_argument(
        "--wandb",
        choices=WANDB_MODES,
        default=None,
        help="W&B mode (default: $WANDB_MODE, else auto = online when logged in, else offline)",
    )
    p.add_argument("--no-tensorboard", action="store_true", help="do not write TensorBoard event files")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument(
        "--population",
        action="append",
        default=[],
        metavar="FIELD=V1,V2",
        help="train one run per combination of the listed lr/seed values, all in one vmapped program "
        "(repeatable; cartesian product); each member gets its own run dir",
    )
    from settings.sweep.flags import add_flags

    add_flags(p)  # --sweep ..., --queue
    add_job_flags(p)
    pbt = p.add_argument_group("population-based training (with --population lr=...)")
    pbt.add_argument(
        "--pbt-interval",
        type=int,
        default=None,
        metavar="STEPS",
        help="every STEPS steps the worst members copy the best ones' weights and perturb their lr",
    )
    pbt.add_argument(
        "--pbt-metric",
        default="",
        metavar="TAG",
        help="tag to rank members by (default: test/loss when the task evaluates, else train/loss)",
    )
    pbt.add_argument(
        "--pbt-fraction", type=float, default=0.25, help="share of members copied / copied from (default 0.25)"
    )
    pbt.add_argument(
        "--pbt-resample",
        type=float,
        default=0.0,
        help="probability of drawing a fresh lr instead of perturbing (default 0)",
    )
    return p


def pbt_config(args: argparse.Namespace, seed: int) -> Any:
    """The PBT settings of the command line, or None without --pbt-interval."""
    if args.pbt_interval is None:
        return None
    from training.engine.pbt import PbtConfig

    return PbtConfig(
        interval=args.pbt_interval,
        metric=args.pbt_metric,
        fraction=args.pbt_fraction,
        resample=args.pbt_resample,
        seed=seed,
    )


def top_help() -> str:
    """`python -m training --help`: the commands and the tasks this install knows."""
    tasks = "\n".join(f"  {name:<14s} {spec}" for name, spec in available().items())
    return (
        f"usage: python -m training TASK [--FIELD VALUE ...]   (TASK --help lists its settings)\n"
        f"       python -m training resume RUN_DIR [--wandb MODE] [--no-tensorboard] [--quiet]\n"
        f"       (either, in every process of a job: --coordinator HOST:PORT --num-processes N --process-id I)\n"
        f"       python -m training TASK --sweep FIELD=V1,V2 [--sweep-method grid|random|tpe] [--trials N]\n"
        f"       python -m training worker --sweep STUDY --storage URL [--runs-root DIR]\n\n"
        f"tasks (a name, or package.module:Class, or path/to/file.py:Class):\n{tasks}\n"
    )


def resume_parser() -> argparse.ArgumentParser:
    r = argparse.ArgumentParser(
        prog="python -m training resume",
        description="continue a stopped or crashed run (its whole population) from its checkpoint",
    )
    r.add_argument("run_dir", type=Path, help="the run directory (runs/<id>)")
    r.add_argument("--wandb", choices=WANDB_MODES, default=None, help="W&B mode (default: the run's own)")
    r.add_argument("--no-tensorboard", action="store_true", help="do not write TensorBoard event files")
    r.add_argument("--quiet", action="store_true", help="no progress bar")
    add_job_flags(r)
    return r


def add_job_flags(p: argparse.ArgumentParser) -> None:
    """--coordinator, --num-processes, --process-id: one run trained by N processes (`jax.distributed`)."""
    job = p.add_argument_group(
        "one job on many processes (jax.distributed; each flag wins over its JAX_* variable)",
        "start the same command in every process; process 0 writes the run, the others only train",
    )
    job.add_argument(
        "--coordinator",
        default=None,
        metavar="HOST:PORT",
        help="process 0's host and a free port ($JAX_COORDINATOR_ADDRESS)",
    )
    job.add_argument("--num-processes", default=None, metavar="N", help="processes in the job ($JAX_NUM_PROCESSES)")
    job.add_argument("--process-id", default=None, metavar="I", help="this process's index, 0..N-1 ($JAX_PROCESS_ID)")


def job_flags(args: argparse.Namespace) -> Any:
    """The job of the command line's flags, else of the JAX_* variables (a JobFlags); ValueError names a bad one."""
    from training.engine.distributed import resolve

    return resolve(args.coordinator, args.num_processes, args.process_id)


def report(run_dir: Path, state: str, final: dict, **extra: Any) -> None:
    """One JSON line per run on stdout (what the page and scripts parse), problems on stderr."""
    status = RunFolder(run_dir).status()
    print(json.dumps({"run_dir": str(run_dir), "state": state, "final": final, **extra}, default=float))
    if state not in ("finished", "stopped"):
        print(f"error: {run_dir.name}: {status.get('message')}", file=sys.stderr)
    sync = (status.get("wandb") or {}).get("sync_command")
    if sync:
        print(f"W&B: to upload this run, run: {sync}", file=sys.stderr)


def exit_code(states: list[str]) -> int:
    """0 when every run finished or stopped, 3 when one diverged, 1 when one failed."""
    codes = [EXIT_CODES.get(s, 1) for s in states]
    return 1 if 1 in codes else max(codes, default=0)


def check_run_dir(run_dir: Path | None) -> str | None:
    """Why `--run-dir` cannot be used, or None.

    With --population it names member 0's folder (the page's launch folder); the other members go
    beside it under --runs-root.
    """
    if run_dir is None:
        return None

    # The dashboard writes launch.json and process.log (this process's output) before starting it;
    # a warm worker may start while launch.json's atomic write still has its temp file there.
    def page_file(name: str) -> bool:
        return name in PAGE_FILES or name.startswith(".launch.json.")

    if run_dir.exists() and not run_dir.is_dir():
        return f"--run-dir {run_dir} is a file, not a folder; give the path of a new (or empty) folder."
    if run_dir.exists() and any(not page_file(p.name) for p in run_dir.iterdir()):
        return f"--run-dir {run_dir} is not empty (it may hold another run); pick a new directory."
    return None


def check_runs_root(root: Path | None) -> str | None:
    """Why the runs root (--runs-root, else $JAXDASH_RUNS, else the per-user default) cannot hold runs, or None."""
    where = run_store.runs_root(root)
    flag = (
        "--runs-root" if root is not None else "$JAXDASH_RUNS" if os.environ.get("JAXDASH_RUNS") else "the runs folder"
    )
    for folder in (where, *where.parents):
        if folder.exists():
            if not folder.is_dir():
                return f"{flag} {where}: {folder} is a file, not a folder; choose a folder for the runs."
            return None
    return None


def check_members(count: int) -> str | None:
    """Why a population of `count` members is refused, or None."""
    if count > MAX_MEMBERS:
        return f"--population makes {count:,} members; at most {MAX_MEMBERS} train as one program. Use fewer values."
    return None


def wandb_mode(flag: str | None) -> str:
    """Explicit --wandb, else $WANDB_MODE (W&B's own variable), else auto."""
    env = os.environ.get("WANDB_MODE", "").strip().lower()
    env = {"dryrun": "offline", "run": "online"}.get(env, env)
    return flag or (env if env in WANDB_MODES else "auto")
