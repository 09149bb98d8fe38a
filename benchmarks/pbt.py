"""PBT vs a fixed-lr population, side by side in one run: best and median member, and wall time.

    python -m benchmarks.pbt [--k 8] [--epochs 3] [--interval 400] [--train-limit 60000]

Fashion-MNIST: K members with learning rates log-spaced over [1e-4, 3e-2] (Adam), trained once as a
fixed population and once with PBT (every `--interval` steps the bottom 25% copy the top 25% and
perturb lr x0.8 / x1.25, ranked by test loss). Regression: lrs log-spaced over [1e-4, 1.0] (SGD),
ranked by train loss; members that diverge in the fixed population end there, PBT copies over them.
Both sides run in this process with no-op writers, one after the other, after an untimed warm-up.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import time

import numpy as np

from runwriters.base import NullWriter
from training.engine.pbt import PbtConfig
from training.runs.in_memory import train
from training.tasks.mnist import MnistConfig, MnistTask
from training.tasks.regression import RegressionConfig, RegressionTask


def run(task, cfgs, pbt):
    t0 = time.perf_counter()
    results = train(task, cfgs, [NullWriter() for _ in cfgs], pbt=pbt)
    return time.perf_counter() - t0, results


def summary(name: str, seconds: float, values: list[float], better: str) -> str:
    finite = [v for v in values if np.isfinite(v)]
    pick = max if better == "max" else min
    best = pick(finite) if finite else float("nan")
    worst_fill = -np.inf if better == "max" else np.inf  # a diverged member counts as the worst
    median = statistics.median(v if np.isfinite(v) else worst_fill for v in values)
    return f"  {name:<6s} best={best:.4f} median={median:.4f} diverged={len(values) - len(finite)} wall={seconds:.1f}s"


def compare(title: str, task, cfgs, pbt: PbtConfig, metric: str, better: str) -> None:
    train(task, dataclasses.replace(cfgs[0]), NullWriter())  # warm-up: imports, compile cache, allocator
    fixed_s, fixed = run(task, cfgs, None)
    pbt_s, tuned = run(task, cfgs, pbt)
    print(
        f"{title}: K={len(cfgs)}, lrs {cfgs[0].lr:g}..{cfgs[-1].lr:g}, PBT every {pbt.interval} steps by {pbt.metric}"
    )
    print(
        summary(
            "fixed", fixed_s, [r.final.get(metric, np.nan) if r.state != "diverged" else np.nan for r in fixed], better
        )
    )
    print(
        summary("pbt", pbt_s, [r.final.get(metric, np.nan) if r.state != "diverged" else np.nan for r in tuned], better)
    )
    print(f"  {title}_pbt_wall_vs_fixed={pbt_s / fixed_s:.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--k", type=int, default=8)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--interval", type=int, default=400)
    ap.add_argument("--train-limit", type=int, default=60_000)
    ap.add_argument("--skip-mnist", action="store_true")
    args = ap.parse_args()
    reg_lrs = np.geomspace(1e-4, 1.0, args.k)
    reg = [RegressionConfig(lr=float(lr), steps=1000) for lr in reg_lrs]
    compare(
        "regression",
        RegressionTask,
        reg,
        PbtConfig(interval=100, metric="train/loss", seed=0, lr_range=(1e-4, 1.0)),
        "train/loss",
        "min",
    )
    if args.skip_mnist:
        return
    mn_lrs = np.geomspace(1e-4, 3e-2, args.k)
    base = MnistConfig(dataset="fashion_mnist", epochs=args.epochs, train_limit=args.train_limit, devices=1)
    mn = [dataclasses.replace(base, lr=float(lr)) for lr in mn_lrs]
    compare(
        "mnist",
        MnistTask,
        mn,
        PbtConfig(interval=args.interval, metric="test/loss", seed=0, lr_range=(1e-4, 3e-2)),
        "test/acc",
        "max",
    )


if __name__ == "__main__":
    main()
