"""The command-line side of sweeps: `TASK --sweep FIELD=...` and `worker --sweep NAME`.

    python -m training regression --steps 200 --sweep lr=log:1e-3:1e-1:4 --sweep seed=0,1
    python -m training regression --sweep lr=loguniform(1e-4,1e-1) --sweep points=64,128 \
        --sweep-method tpe --trials 20 --max-parallel 2
    python -m training worker --sweep NAME --storage sqlite:////shared/runs/sweeps.db

Every problem with the space is reported in one line before anything starts.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from runstore import run_states, run_store
from runwriters.wandb.mode import MODES as WANDB_MODES
from settings.sweep import server
from settings.sweep import study as studies
from settings.sweep.space import parse_space


def _worker_argv(name: str, url: str, root: Path, args: argparse.Namespace) -> list[str]:
    argv = ["worker", "--sweep", name, "--storage", url, "--runs-root", str(root)]
    argv += ["--max-parallel", str(args.max_parallel)]  # its claims are populations of up to K, as this one's
    return argv + (["--wandb", args.wandb] if args.wandb else [])


def run_sweep(task: str, task_cls: type, raw: dict[str, Any], args: argparse.Namespace, wandb_mode: str) -> int:
    """Create the study, then train it: in this process, plus `--workers - 1` queued workers beside it."""
    from settings.fields import ConfigError, parse_config
    from training.sweep.trials import shares_program
    from training.sweep.worker import run_worker

    space = parse_space(args.sweep, task_cls.Config, args.sweep_method)
    base = {k: v for k, v in raw.items() if k not in space}
    parse_config(task_cls.Config, {**base, **{n: _first(p) for n, p in space.items()}}, task_cls.name)
    if args.trials is not None and args.trials < 1:
        raise ConfigError({"trials": f"must be >= 1 (got {args.trials})"})
    root = run_store.runs_root(args.runs_root)
    root.mkdir(parents=True, exist_ok=True)
    url = args.storage or studies.default_url(root)
    name = args.study or f"{task_cls.name}-{time.strftime('%Y%m%d-%H%M%S')}"
    tensorboard = not args.no_tensorboard
    objective = studies.Objective(args.sweep_metric, args.sweep_direction, args.sweep_pruner)
    studies.create(
        name, url, studies.StudySpec(task, base, space, args.sweep_method, args.trials, objective, tensorboard)
    )
    print(json.dumps({"study": name, "storage": server.shown(url)}), flush=True)
    helpers = []
    workers = args.workers or (args.max_parallel if not shares_program(space) and args.sweep_method != "grid" else 1)
    if workers > 1:
        from settings.queue import store as queue

        # queue.db and the workers' command lines get the URL without its password; the workers this
        # process starts get it in their environment (readable by this user only, unlike `ps`).
        stored, password = server.without_password(url)
        env = {server.PASSWORD_ENV: password} if password else None
        try:
            db = queue.Queue(root)
            argv = _worker_argv(name, stored, root, args)
            helpers = [db.submit(argv, label=f"{name} worker", env=env) for _ in range(workers - 1)]
            db.dispatch()
        except OSError as exc:  # QueueError, KeyRefused: one line naming the file and the fix
            raise ConfigError({"workers": f"need the run queue, which cannot be used: {exc}"}) from None
    states = run_worker(name, url, root, args.max_parallel, wandb_mode, console=not args.quiet)
    for job in helpers:
        db.wait(job)
    print(json.dumps({"study": name, "trials": states}), flush=True)
    return 0 if states and all(run_states.EXIT_CODES.get(s, 1) == 0 for s in states) else 1


def _first(p: Any) -> Any:
    """A value of the param to check the fixed settings with (the distribution's low end)."""
    if p.values:
        return p.values[0]
    d = p.distribution
    return d.choices[0] if hasattr(d, "choices") else d.low


def worker_main(argv: list[str]) -> int:
    """`python -m training worker --sweep NAME --storage URL [--runs-root DIR] [--max-parallel K]`.

    A server URL without a password takes $JAXDASH_STORAGE_PASSWORD's, else libpq's $PGPASSWORD or ~/.pgpass.
    """
    from settings.fields import ConfigError
    from training.sweep.worker import run_worker

    p = argparse.ArgumentParser(prog="python -m training worker", description="train trials of a sweep's study")
    p.add_argument("--sweep", required=True, metavar="STUDY", help="the study's name")
    p.add_argument("--storage", default=None, help="Optuna storage URL (default sqlite:///<runs root>/sweeps.db)")
    p.add_argument("--runs-root", type=Path, default=None, help="where the trials' run folders go (shared)")
    p.add_argument("--max-parallel", type=int, default=1, help="lr/seed trials trained together as a population")
    p.add_argument("--wandb", default=None, choices=WANDB_MODES)
    args = p.parse_args(argv)
    from training.cli import wandb_mode

    root = run_store.runs_root(args.runs_root)
    url = server.with_env_password(args.storage or studies.default_url(root))  # a sweep's workers: no password in ps
    try:
        states = run_worker(args.sweep, url, root, args.max_parallel, wandb_mode(args.wandb))
    except ConfigError as exc:
        print("error: " + "; ".join(f"--{k.replace('_', '-')} {v}" for k, v in exc.errors.items()), file=sys.stderr)
        return 2
    print(json.dumps({"study": args.sweep, "trials": states}), flush=True)
    return 0
