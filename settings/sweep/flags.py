"""The sweep and queue flags of a task's command line (no Optuna import: parsing stays fast)."""

from __future__ import annotations

import argparse

METHODS = ("grid", "random", "tpe")
DIRECTIONS = ("minimize", "maximize")


def add_flags(p: argparse.ArgumentParser) -> None:
    """The sweep options of a task's parser."""
    g = p.add_argument_group("sweeps (an Optuna study; each trial is a run)")
    g.add_argument(
        "--sweep",
        action="append",
        default=[],
        metavar="FIELD=SPEC",
        help="vary FIELD: V1,V2,... | lo:hi:count | log:lo:hi:count | uniform(lo,hi) | loguniform(lo,hi) | "
        "int(lo,hi) | choice(a,b) (repeatable)",
    )
    g.add_argument("--sweep-method", choices=METHODS, default="grid", help="sampler (default grid)")
    g.add_argument("--trials", type=int, default=None, help="trials to run (default: the grid's size, else 20)")
    g.add_argument(
        "--max-parallel",
        type=int,
        default=1,
        help="trials at once: lr/seed-only trials train as one vmapped population, others as parallel workers",
    )
    g.add_argument(
        "--workers",
        type=int,
        default=None,
        help="worker processes, through the run queue (default: --max-parallel when trials change shapes, else 1)",
    )
    g.add_argument("--study", default=None, help="study name (default: <task>-<time>)")
    g.add_argument("--storage", default=None, help="Optuna storage URL (default sqlite:///<runs root>/sweeps.db)")
    g.add_argument(
        "--queue", action="store_true", help="start through the run queue (at most N training processes at once)"
    )
    g.add_argument(
        "--queue-limit",
        type=int,
        default=None,
        metavar="N",
        help="at most N training processes at once in this runs root's queue, kept for later starts "
        "(default: from the cores and free memory); implies --queue",
    )
    g.add_argument(
        "--sweep-metric", default="auto", help="the objective: a metric's key (default test/loss, else train/loss)"
    )
    g.add_argument(
        "--sweep-direction", choices=DIRECTIONS, default="minimize", help="minimize (default) or maximize it"
    )
    g.add_argument(
        "--sweep-pruner",
        default="median",
        metavar="PRUNER",
        help="median (Optuna's MedianPruner, the default) | none | threshold:VALUE (prune a trial whose value "
        "goes past VALUE: above it when minimising, below when maximising)",
    )
