"""Command line: `python -m training {regression,mnist} [--field value ...]` and `python -m training resume DIR`.

Every config field is a flag (`--batch-size 64`, also `--batch_size=64` as W&B
Sweeps agents pass it). The run is written to a run directory that the
dashboard, TensorBoard and W&B all read.

    python -m training mnist --population lr=0.001,0.003 --population seed=0,1   # 4 runs, one program
    python -m training resume runs/<id>                                           # continue from its checkpoint
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import os
import sys
from pathlib import Path

from training import run_store
from training.config import CONFIG_CLASSES, ConfigError, parse_config

EXIT_CODES = {"finished": 0, "stopped": 0, "failed": 1, "diverged": 3}


def build_parser() -> argparse.ArgumentParser:
    """Parser with one sub-command per task and one flag per config field."""
    parser = argparse.ArgumentParser(prog="python -m training", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="task", required=True)
    for task, cls in CONFIG_CLASSES.items():
        p = sub.add_parser(task, help=(cls.__doc__ or "").splitlines()[0])
        for f in dataclasses.fields(cls):
            default = f.default if f.default is not dataclasses.MISSING else f.default_factory()  # type: ignore[misc]
            shown = ",".join(map(str, default)) if isinstance(default, tuple) else default
            flags = dict.fromkeys([f"--{f.name.replace('_', '-')}", f"--{f.name}"])
            p.add_argument(
                *flags, dest=f.name, default=None,
                metavar=f.name.upper(), help=f"(default: {shown})",
            )
        p.add_argument("--run-dir", type=Path, default=None, help="write the run here (default: a new dir under --runs-root)")
        p.add_argument("--runs-root", type=Path, default=None, help="root of run directories (default: $JAXDASH_RUNS or ./runs)")
        p.add_argument("--name", default=None, help="display name of the run")
        p.add_argument(
            "--wandb", choices=("auto", "online", "offline", "disabled"), default="auto",
            help="W&B mode: auto = online when logged in, else offline (default: auto)",
        )
        p.add_argument("--no-tensorboard", action="store_true", help="do not write TensorBoard event files")
        p.add_argument("--quiet", action="store_true", help="no progress bar")
        p.add_argument(
            "--population", action="append", default=[], metavar="FIELD=V1,V2",
            help="train a population: one run per combination of the listed lr/seed values, all in one "
                 "vmapped program (repeatable; cartesian product). Each member gets its own run dir.",
        )
    r = sub.add_parser("resume", help="continue a stopped or crashed run from its latest checkpoint")
    r.add_argument("run_dir", type=Path, help="the run directory (runs/<id>)")
    r.add_argument("--wandb", choices=("auto", "online", "offline", "disabled"), default=None,
                   help="W&B mode (default: the mode the run was started with)")
    r.add_argument("--no-tensorboard", action="store_true", help="do not write TensorBoard event files")
    r.add_argument("--quiet", action="store_true", help="no progress bar")
    return parser


def enable_compilation_cache() -> None:
    """Keep compiled XLA programs on disk so a run's second start skips compiling (JAX's own cache).

    Small programs matter here: data generation, init and the chunk together compile for about a
    second on a laptop CPU, all of it before the first point reaches the page. $JAXDASH_JIT_CACHE=0
    turns it off; $JAX_COMPILATION_CACHE_DIR picks the folder.
    """
    if os.environ.get("JAXDASH_JIT_CACHE", "1") == "0":
        return
    import jax

    cache = os.environ.get("JAX_COMPILATION_CACHE_DIR") or str(
        Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "jaxdash" / "jax"
    )
    jax.config.update("jax_compilation_cache_dir", cache)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)


def warm_worker() -> int:
    """`python -m training worker`: import everything, say "ready", then run one job from stdin.

    The dashboard keeps one such process waiting so that pressing Start does not pay for
    importing JAX, Flax, Optax and the tracking backends (seconds on a laptop). The job is
    one JSON line: {"argv": [...], "log": "path/to/process.log", "env": {...}, "cwd": "..."};
    it runs exactly as the CLI would with that environment and working directory.
    """
    import jax

    import training.mnist  # noqa: F401 - warm import
    import training.regression  # noqa: F401 - warm import
    import training.writers.build  # noqa: F401 - warm import

    jax.devices()  # initialise the backend now, not on the first step
    try:
        import tensorboardX  # noqa: F401
        import wandb  # noqa: F401
    except ImportError:
        pass
    print("ready", flush=True)
    line = sys.stdin.readline()
    if not line.strip():
        return 0  # the dashboard shut down without using this worker
    job = json.loads(line)
    os.environ.update(job.get("env") or {})
    if job.get("cwd"):
        os.chdir(job["cwd"])
    if job.get("log"):
        fd = os.open(job["log"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.close(fd)
    return main(list(job["argv"]))


def _report(run_dir: Path, state: str, final: dict, **extra: object) -> None:
    """One JSON line per run on stdout (what the page and scripts parse), problems on stderr."""
    status = run_store.read_status(run_dir)
    print(json.dumps({"run_dir": str(run_dir), "state": state, "final": final, **extra}, default=float))
    if state not in ("finished", "stopped"):
        print(f"error: {run_dir.name}: {status.get('message')}", file=sys.stderr)
    sync = (status.get("wandb") or {}).get("sync_command")
    if sync:
        print(f"W&B: to upload this run, run: {sync}", file=sys.stderr)


def _resume(args: argparse.Namespace) -> int:
    from training.errors import CannotResume
    from training.run import resume

    try:
        state, result = resume(args.run_dir, wandb_mode=args.wandb, tensorboard=False if args.no_tensorboard else None,
                               console=not args.quiet)
    except CannotResume as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    _report(args.run_dir, state, result.final if result else {}, resumed_from=run_store.read_status(args.run_dir).get("resumed_from"))
    return EXIT_CODES.get(state, 1)


def _population(args: argparse.Namespace, raw: dict, argv: list[str]) -> int:
    from training.population import execute_population, member_configs, parse_axes

    try:
        axes = parse_axes(args.population)
        cfgs = member_configs(args.task, raw, axes)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.run_dir is not None:
        print("error: --run-dir names one run; a population creates one run dir per member under --runs-root.", file=sys.stderr)
        return 2
    if os.environ.get("WANDB_SWEEP_ID") and args.wandb != "disabled":
        # The agent made one W&B run (WANDB_RUN_ID) for this trial; K members cannot all be it.
        print("error: --population under a W&B sweep agent: let the sweep vary lr/seed instead.", file=sys.stderr)
        return 2
    out = execute_population(
        cfgs, list(axes), root=args.runs_root, name=args.name, wandb_mode=args.wandb,
        tensorboard=not args.no_tensorboard, console=not args.quiet, command=["python", "-m", "training", *argv],
    )
    for i, (run_dir, state, result) in enumerate(out):
        _report(run_dir, state, result.final if result else {}, member=i)
    states = {s for _, s, _ in out}
    return 1 if states - {"finished", "stopped", "diverged"} else 3 if "diverged" in states else 0


def main(argv: list[str] | None = None) -> int:
    """Parse flags, validate the config, train; returns the process exit code."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["worker"]:
        return warm_worker()
    args = build_parser().parse_args(argv)
    enable_compilation_cache()
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    if args.task == "resume":
        return _resume(args)
    cls = CONFIG_CLASSES[args.task]
    raw = {f.name: getattr(args, f.name) for f in dataclasses.fields(cls) if getattr(args, f.name) is not None}
    if args.population:
        return _population(args, raw, argv)
    try:
        cfg = parse_config(args.task, raw)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.run_dir is not None:
        run_dir = args.run_dir
        if (run_dir / "config.json").exists():
            print(f"error: --run-dir {run_dir} already holds a run; pick a new directory.", file=sys.stderr)
            return 2
    else:
        run_dir = run_store.new_run_dir(args.runs_root, args.task, args.name)

    from training.run import execute

    state, result = execute(
        cfg, run_dir, name=args.name, wandb_mode=args.wandb, tensorboard=not args.no_tensorboard,
        console=not args.quiet, command=["python", "-m", "training", *argv],
    )
    _report(run_dir, state, result.final if result else {})
    return EXIT_CODES.get(state, 1)


if __name__ == "__main__":
    sys.exit(main())
