"""`python -m training TASK [--FIELD VALUE ...]`, `python -m training resume DIR`: parse, then dispatch."""

from __future__ import annotations

import logging
import os
import sys

from runstore.run_folder import RunFolder
from settings.fields import ConfigError
from training import cli


def _fail(message: str, code: int = 2) -> int:
    print(f"error: {message}", file=sys.stderr)
    return code


def _resume(argv: list[str]) -> int:
    from training.engine.distributed import JobError
    from training.errors import CannotResume
    from training.runs.resume import resume

    args = cli.resume_parser().parse_args(argv)
    try:
        job = cli.job_flags(args)
    except ValueError as exc:
        return _fail(str(exc))
    try:
        outcomes = resume(
            args.run_dir,
            wandb_mode=args.wandb,
            tensorboard=False if args.no_tensorboard else None,
            console=not args.quiet,
            job=job,
        )
    except (CannotResume, ConfigError) as exc:
        return _fail(str(exc))
    except JobError as exc:
        return _fail(str(exc), 1)
    for run_dir, state, result in outcomes:
        resumed_from = RunFolder(run_dir).status().get("resumed_from")
        cli.report(run_dir, state, result.final if result else {}, resumed_from=resumed_from)
    return cli.exit_code([s for _, s, _ in outcomes])


def _train(task: str, argv: list[str]) -> int:
    from settings.population import member_raws, parse_axes
    from training.tasks import load_task

    try:
        task_cls = load_task(task)
    except ConfigError as exc:
        return _fail(exc.errors["task"])
    args = cli.task_parser(task, task_cls).parse_args(argv)
    raw = {f: getattr(args, f) for f in task_cls.Config.__dataclass_fields__ if getattr(args, f) is not None}
    problem = cli.check_run_dir(args.run_dir) or cli.check_runs_root(args.runs_root)
    if problem:
        return _fail(problem)
    try:
        job = cli.job_flags(args)
    except ValueError as exc:
        return _fail(str(exc))
    if args.population and os.environ.get("WANDB_SWEEP_ID") and args.wandb != "disabled":
        # The agent made one W&B run (WANDB_RUN_ID) for this trial; K members cannot all be it.
        return _fail("--population under a W&B sweep agent: let the sweep vary lr/seed instead.")
    if args.sweep or args.queue or args.queue_limit is not None:
        return _sweep_or_queue(task, task_cls, raw, args, argv)
    from runwriters.base import Tracking
    from training.engine.distributed import JobError
    from training.runs.run import NewRuns, execute

    try:
        axes = parse_axes(args.population)
        raws = member_raws(raw, axes) if axes else [raw]
        if cli.check_members(len(raws)):
            return _fail(cli.check_members(len(raws)))
        command = ["python", "-m", "training", task, *argv]
        outcomes = execute(
            task,
            raws,
            NewRuns(list(axes), args.run_dir, args.runs_root, args.name, command),
            tracking=Tracking(cli.wandb_mode(args.wandb), not args.no_tensorboard, not args.quiet),
            pbt=cli.pbt_config(args, int(raw.get("seed") or 0)),
            job=job,
        )
    except ConfigError as exc:
        return _fail(str(exc))
    except JobError as exc:
        return _fail(str(exc), 1)
    except OSError as exc:
        from training.runs.lifecycle import describe_os_error

        return _fail(describe_os_error(exc), 1)
    for i, (run_dir, state, result) in enumerate(outcomes):
        cli.report(run_dir, state, result.final if result else {}, **({"member": i} if axes else {}))
    return cli.exit_code([s for _, s, _ in outcomes])


def _sweep_or_queue(task: str, task_cls: type, raw: dict, args: object, argv: list[str]) -> int:
    """`--sweep`: an Optuna study trained by workers; `--queue` (no sweep): this run waits its turn."""
    if args.sweep and args.population:
        return _fail("--sweep and --population: list the population's values in --sweep instead.")
    if args.queue_limit is not None:
        from training.queue.command import set_queue_limit

        problem = set_queue_limit(args.runs_root, args.queue_limit)
        if problem:
            return _fail(problem)
    try:
        if args.sweep:
            from training.sweep.command import run_sweep

            return run_sweep(task, task_cls, raw, args, cli.wandb_mode(args.wandb))
        from training.queue.command import run_queued

        return run_queued(task, argv, args.runs_root)
    except ConfigError as exc:  # one line naming the flag: the space is checked before anything starts
        return _fail("; ".join(f"--{k.replace('_', '-')} {v}" for k, v in exc.errors.items()))


def main(argv: list[str] | None = None) -> int:
    """Dispatch on the first word; returns the process exit code."""
    argv = sys.argv[1:] if argv is None else list(argv)
    from training.runs.warm_worker import share_the_machine

    share_the_machine()  # before anything starts JAX's backend
    if argv[:1] == ["--task"]:
        argv = argv[1:]
    if not argv or argv[0] in ("-h", "--help", "tasks"):
        print(cli.top_help())
        return 0 if argv else 2
    if argv[0] == "worker" and any(a == "--sweep" or a.startswith("--sweep=") for a in argv[1:]):
        from training.sweep.command import worker_main

        logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
        return worker_main(argv[1:])
    if argv[0] == "worker":
        from training.runs.warm_worker import warm_worker

        return warm_worker(main)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    from training.runs.warm_worker import enable_compilation_cache

    enable_compilation_cache()
    if argv[0] == "resume":
        return _resume(argv[1:])
    return _train(argv[0], argv[1:])


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:  # a signal before the run installed its handlers: no traceback
        sys.exit(130)
