"""A 3 x 3 grid (hidden width x learning rate) on Fashion-MNIST three ways, timed end to end.

    python -m benchmarks.sweep_queue [--quick] [--train-limit 5000] [--epochs 2]

(a) nine `python -m training mnist` processes started at once; (b) the nine runs through the run
queue (its default limit); (c) the sweep: `--sweep hidden=... --sweep lr=...` with --max-parallel 3,
i.e. three populations of three (one per width), one after another in one worker process (the default
for a grid). Each prints the total wall
time and the per-run steps/s (median of the runs' last `perf/steps_per_sec`); the last line is
`sweep_vs_at_once=X.XX` ((c) / (a) in wall time; the goal is <= 0.5). (c3) is (c) with --workers 3:
on two cores, more worker processes each pay the start-up (imports, compiling) and then share the cores. --quick: 1,000 examples, 1 epoch.
Each way writes to a fresh runs root under a temporary folder, with W&B and TensorBoard off.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from runstore import run_store
from runstore.run_folder import RunFolder
from settings.queue.store import Queue

WIDTHS = ("32", "64", "128")
LRS = ("0.0003", "0.001", "0.003")
ENV = {**os.environ, "WANDB_MODE": "disabled"}


def _common(args: argparse.Namespace, root: Path) -> list[str]:
    return [
        "mnist",
        "--dataset",
        "fashion_mnist",
        "--train-limit",
        str(args.train_limit),
        "--test-limit",
        "1000",
        "--epochs",
        str(args.epochs),
        "--runs-root",
        str(root),
        "--quiet",
        "--no-tensorboard",
        "--wandb",
        "disabled",
    ]


def _grid(args: argparse.Namespace, root: Path) -> list[list[str]]:
    return [[*_common(args, root), "--hidden", w, "--lr", lr] for w in WIDTHS for lr in LRS]


def _steps_per_sec(root: Path) -> float:
    """Median over the runs of their last reported steps/s."""
    rates = []
    for d in run_store.run_folders(root):
        records, _ = RunFolder(d).records()
        last = [r["perf/steps_per_sec"] for r in records if isinstance(r.get("perf/steps_per_sec"), int | float)]
        if last:
            rates.append(last[-1])
    return statistics.median(rates) if rates else float("nan")


def at_once(args: argparse.Namespace, root: Path) -> float:
    """(a): nine processes started together."""
    t0 = time.perf_counter()
    procs = [
        subprocess.Popen([sys.executable, "-m", "training", *argv], env=ENV, stdout=subprocess.DEVNULL)
        for argv in _grid(args, root)
    ]
    codes = [p.wait() for p in procs]
    if any(codes):
        raise SystemExit(f"(a) a run failed: exit codes {codes}")
    return time.perf_counter() - t0


def queued(args: argparse.Namespace, root: Path) -> float:
    """(b): the nine runs through the queue, its default limit."""
    t0 = time.perf_counter()
    q = Queue(root)
    jobs = [q.submit(argv) for argv in _grid(args, root)]
    for job in jobs:
        q.wait(job)
    return time.perf_counter() - t0


def sweep(args: argparse.Namespace, root: Path, workers: int | None = None) -> float:
    """(c): the grid as a sweep, three populations of three, as the CLI runs it by default (one worker)."""
    argv = [*_common(args, root), "--sweep", "hidden=" + ";".join(WIDTHS), "--sweep", "lr=" + ",".join(LRS)]
    argv += ["--max-parallel", "3", "--study", "bench"] + (["--workers", str(workers)] if workers else [])
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "training", *argv], env=ENV, capture_output=True, text=True)
    if proc.returncode:
        raise SystemExit(f"(c) the sweep failed: {proc.stderr[-1500:]}")
    return time.perf_counter() - t0


def sweep_three_workers(args: argparse.Namespace, root: Path) -> float:
    """(c3): the same sweep with --workers 3 (two more worker processes through the queue)."""
    return sweep(args, root, workers=3)


def main() -> None:
    """Run the three ways and print their numbers."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="1,000 examples, 1 epoch")
    p.add_argument("--train-limit", type=int, default=5000)
    p.add_argument("--epochs", type=int, default=2)
    args = p.parse_args()
    if args.quick:
        args.train_limit, args.epochs = 1000, 1
    print(f"queue limit (default): {Queue(tempfile.mkdtemp()).limit()}; cores: {os.cpu_count()}")
    walls = {}
    with tempfile.TemporaryDirectory(prefix="sweep-bench-") as tmp:
        for key, fn in (("a", at_once), ("b", queued), ("c", sweep), ("c3", sweep_three_workers)):
            root = Path(tmp) / key
            walls[key] = fn(args, root)
            print(
                f"({key}) {fn.__doc__.split(':')[1].strip()} wall={walls[key]:.1f}s "
                f"steps_per_sec_per_run={_steps_per_sec(root):.1f} runs={len(run_store.run_folders(root))}"
            )
    print(f"sweep_vs_at_once={walls['c'] / walls['a']:.2f}")


if __name__ == "__main__":
    main()
