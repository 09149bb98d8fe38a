"""A population of K runs in one vmapped program vs the same K runs one after another.

    python -m benchmarks.population_speed [--k 8] [--dataset fashion_mnist] [--train-limit 60000] [--epochs 1]

Both sides call the training functions in this process with no-op writers, no checkpoints and
one device, and are timed end to end (data load, compile, training, evaluation): what a user
waits for. One untimed single run warms up imports and caches first. The members vary lr and
seed (4 learning rates x K/4 seeds). Printed per task: seconds of the population, of one run
(median of the K sequential runs) and of all K, and the training throughput in member-steps/s.
The last two lines are `population_vs_one_run=X.XX` and `population_vs_sequential=X.XX` for
MNIST (population seconds / one run's seconds, and / the K runs' seconds).

    python -m benchmarks.population_speed --per-member 1,4,16 [--train-limit 60000] [--epochs 1]

times MNIST populations of each size alone (no sequential runs) and prints the steps/s per member:
end to end, and steady (the engine's smoothed chunk rate), as `per_member K=.. steady=.. end_to_end=..`.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from runwriters.base import NullWriter
from training.runs.in_memory import train
from training.tasks.mnist import MnistConfig, MnistTask
from training.tasks.regression import RegressionConfig, RegressionTask

LRS = (0.0003, 0.001, 0.003, 0.01)


def members(base: Any, k: int) -> list[Any]:
    """K configs: LRS x seeds 0.. (k must be a multiple of 4 for a full grid; else the first k)."""
    grid = [replace(base, lr=lr, seed=seed) for seed in range(max(1, -(-k // len(LRS)))) for lr in LRS]
    return grid[:k]


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def compare(name: str, cfgs: list[Any], task: Any) -> tuple[float, float, float]:
    """Time the population and the sequential runs of `cfgs`; print and return (pop, one, sequential) seconds."""
    train(task, cfgs[0], NullWriter())  # warm-up, untimed
    k = len(cfgs)
    pop_s, results = timed(lambda: train(task, cfgs, [NullWriter() for _ in cfgs]))
    singles = [timed(lambda c=c: train(task, c, NullWriter())[0]) for c in cfgs]
    seq_s = sum(s for s, _ in singles)
    one_s = statistics.median(s for s, _ in singles)
    steps = results[0].steps
    pop_rate = k * steps / pop_s
    one_rate = steps / one_s
    print(f"{name}: K={k}, {steps} steps each")
    print(
        f"  population      {pop_s:7.2f} s  ({pop_rate:,.0f} member-steps/s end to end, "
        f"steady {k * (results[0].extra['steps_per_sec'] or 0):,.0f})"
    )
    print(
        f"  one run         {one_s:7.2f} s  ({one_rate:,.0f} steps/s end to end, "
        f"steady {statistics.median(r.extra['steps_per_sec'] or 0 for _, r in singles):,.0f})"
    )
    print(f"  {k} sequential   {seq_s:7.2f} s")
    print(f"  {name}_population_vs_one_run={pop_s / one_s:.2f} {name}_population_vs_sequential={pop_s / seq_s:.2f}")
    return pop_s, one_s, seq_s


def per_member(sizes: list[int], base: Any) -> None:
    """Steps/s per member of MNIST populations of each size (after one untimed warm-up run)."""
    train(MnistTask, base, NullWriter())
    for k in sizes:
        seconds, results = timed(lambda k=k: train(MnistTask, members(base, k), [NullWriter() for _ in range(k)]))
        steps, steady = results[0].steps, results[0].extra["steps_per_sec"] or 0
        print(f"per_member K={k} steady={steady:,.0f} end_to_end={steps / seconds:,.0f} steps/s ({seconds:.2f} s)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--k", type=int, default=8)
    ap.add_argument("--dataset", default="fashion_mnist")
    ap.add_argument("--train-limit", type=int, default=60_000)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--reg-steps", type=int, default=1000)
    ap.add_argument("--per-member", default="", help="e.g. 1,4,16: steps/s per member of each population size only")
    args = ap.parse_args()
    if args.per_member:
        base = MnistConfig(dataset=args.dataset, train_limit=args.train_limit, epochs=args.epochs, devices=1)
        per_member([int(k) for k in args.per_member.split(",")], base)
        return
    reg = RegressionConfig(steps=args.reg_steps, optimizer="adam")
    compare("regression", members(reg, args.k), RegressionTask)
    mn = MnistConfig(dataset=args.dataset, train_limit=args.train_limit, epochs=args.epochs, devices=1)
    pop_s, one_s, seq_s = compare("mnist", members(mn, args.k), MnistTask)
    print(f"population_vs_one_run={pop_s / one_s:.2f}")
    print(f"population_vs_sequential={pop_s / seq_s:.2f}")


if __name__ == "__main__":
    main()
