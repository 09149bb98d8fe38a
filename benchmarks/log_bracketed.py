"""What `run.log` every step costs, each logged epoch timed between two unlogged ones of the same loop.

    .venv/bin/python -m benchmarks.log_bracketed [--pairs 8] [--limit 60000]

benchmarks/log_overhead.py runs each way of logging as a loop of its own and compares whole loops:
on this VM, two identical loops a minute apart differ by up to 10-30%, more than the 5% the goal
allows. Here one loop (the same step, data and run as log_overhead's jaxdash rows) alternates:
epochs 0, 2, 4, ... log nothing, epochs 1, 3, 5, ... call `run.log({"loss": loss})` every step,
and each logged epoch's steps/s is divided by the mean of its two neighbours': a drift slower than
an epoch (~1 s) cancels out. After every epoch the loop sleeps SETTLE_S untimed, so what the
writers still do for a logged epoch (the fetch thread, the writer process, wandb-core) is done
before the next unlogged epoch starts and is not billed to it. Printed: per way of logging
(all writers; the run store alone), the median of those ratios, their range and count.
Goal (issue #19): all writers >= 0.95.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import jax  # noqa: E402
import numpy as np  # noqa: E402

from benchmarks.log_overhead import BATCH, make_step  # noqa: E402
from training.data import load_dataset  # noqa: E402

SETTLE_S = 1.0
INIT_SETTLE_S = 5.0  # the writer process's wandb.init runs in the background: let it end before any timing


def bracketed(
    fresh: Callable, train_step: Callable, n: int, pairs: int, log: Callable[[int, jax.Array], None]
) -> list[float]:
    """Each logged epoch's steps/s over the mean of its two unlogged neighbours' (2 * pairs + 1 timed epochs)."""
    state, key, steps = fresh(), jax.random.key(1), n // BATCH
    rates, step = [], 0
    for epoch in range(2 * pairs + 2):  # epoch 0 compiles: not timed
        key, sub = jax.random.split(key)
        perms = jax.random.permutation(sub, n)[: steps * BATCH].reshape(steps, BATCH)
        jax.block_until_ready(perms)
        logged = epoch % 2 == 0 and epoch > 0
        t0 = time.perf_counter()
        for i in range(steps):
            state, loss = train_step(state, perms[i])
            if logged:
                log(step, loss)
            step += 1
        jax.block_until_ready(state)
        rates.append(steps / (time.perf_counter() - t0))
        time.sleep(SETTLE_S)
    timed = rates[1:]  # unlogged, logged, unlogged, ..., unlogged
    return [timed[i] / ((timed[i - 1] + timed[i + 1]) / 2) for i in range(1, len(timed) - 1, 2)]


def main() -> None:
    """Run the bracketed loop with every writer, then with the run store alone; print the ratios."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pairs", type=int, default=8, help="logged epochs (each between two unlogged ones)")
    p.add_argument("--limit", type=int, default=60_000, help="training examples used")
    args = p.parse_args()
    os.environ.setdefault("WANDB_SILENT", "true")
    import jaxdash

    train_x, train_y, _, _ = load_dataset("fashion_mnist")
    x, y = train_x[: args.limit], train_y[: args.limit]
    fresh, train_step = make_step(x.reshape(len(x), -1).astype(np.float32) / 255.0, y)
    print(f"Fashion-MNIST {len(x):,} examples, batch {BATCH}: each logged epoch against its unlogged neighbours")
    with tempfile.TemporaryDirectory() as tmp:
        for label, wandb_mode, tensorboard in (("all writers", "offline", True), ("run store only", "disabled", False)):
            run = jaxdash.init(project="log-bracketed", runs_root=Path(tmp), wandb=wandb_mode, tensorboard=tensorboard)
            time.sleep(INIT_SETTLE_S)
            ratios = bracketed(
                fresh, train_step, len(x), args.pairs, lambda step, loss, run=run: run.log({"loss": loss}, step=step)
            )
            run.finish()
            print(
                f"  run.log, {label:14s} median {statistics.median(ratios):.3f}x   "
                f"range {min(ratios):.3f}-{max(ratios):.3f}   ({len(ratios)} epochs; load {os.getloadavg()[0]:.2f})"
            )


if __name__ == "__main__":
    main()
