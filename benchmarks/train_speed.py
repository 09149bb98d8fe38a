"""Seed-style per-step loop vs our chunked loop, same model, same data, one process.

    python -m benchmarks.train_speed [--epochs 3] [--dataset fashion_mnist] [--reg-steps 1000]

(a) seed style: a per-step `@jax.jit` train_step called from a Python for-loop over host numpy
    batches (the Flax/Optax tutorials); metrics stay on the device until a log step fetches them.
(b) ours: `train_mnist` / `train_regression` (device-resident data, K steps per jitted lax.scan).
The first epoch (compile, warm-up) is not timed. The machine is shared, so rounds alternate the
two loops and the best epoch of each is compared (the median is printed too).
The last line is `speedup_vs_seed_loop=X.XX` (MNIST best seconds/epoch, seed / ours).
"""

from __future__ import annotations

import argparse
import statistics
import time

import jax
import numpy as np

from training.config import MnistConfig, RegressionConfig
from training.data import load_dataset
from training.mnist import create_state, evaluate, train_mnist, train_step
from training.regression import init, make_data, make_optimizer, make_update, train_regression
from training.writers.base import MetricWriter


class TimingWriter(MetricWriter):
    """Notes when each chunk and each epoch was reported (training calls it between chunks)."""

    def __init__(self) -> None:
        self.chunks: list[float] = []
        self.epochs: list[float] = []

    def write_scalars(self, step, scalars, progress=None):  # noqa: D102
        now = time.perf_counter()
        self.chunks.append(now)
        if "epoch/train_loss" in scalars:
            self.epochs.append(now)


def seed_mnist(cfg: MnistConfig) -> tuple[list[float], float, float]:
    """Per-step jitted loop over host batches. Returns (seconds of each epoch, first-step seconds, test acc)."""
    train_x, train_y, test_x, test_y = load_dataset(cfg.dataset, cfg.data_dir)
    x = train_x.reshape(len(train_x), -1).astype(np.float32) / 255.0
    tx = test_x.reshape(len(test_x), -1).astype(np.float32) / 255.0
    state = create_state(cfg, jax.random.split(jax.random.key(cfg.seed))[0])
    step_fn = jax.jit(train_step)
    eval_fn = jax.jit(lambda p, a, b: evaluate(state.apply_fn, p, a, b))
    rng = np.random.default_rng(cfg.seed)
    steps = len(x) // cfg.batch_size
    times, first_step, acc = [], 0.0, 0.0
    for _ in range(cfg.epochs):
        t0 = time.perf_counter()
        perm = rng.permutation(len(x))
        pending = []
        for i in range(steps):
            idx = perm[i * cfg.batch_size : (i + 1) * cfg.batch_size]
            state, metrics = step_fn(state, {"image": x[idx], "label": train_y[idx]})  # host->device copy per step
            pending.append(metrics)
            if i == 0 and not times:
                jax.block_until_ready(metrics)
                first_step = time.perf_counter() - t0
            if (i + 1) % cfg.log_every == 0 or i == steps - 1:
                jax.device_get(pending)  # sync point: fetch the logged metrics, as a tutorial loop would
                pending = []
        acc = float(eval_fn(state.params, tx, test_y)[1])  # sync point: epoch-end test accuracy
        times.append(time.perf_counter() - t0)
    return times, first_step, acc


def ours_mnist(cfg: MnistConfig) -> tuple[list[float], float, float]:
    """train_mnist as shipped. Returns (seconds of each epoch after the first, compile seconds, test acc)."""
    writer = TimingWriter()
    result = train_mnist(cfg, writer)
    return list(np.diff(writer.epochs)), result.extra["compile_seconds"], result.final["test/acc"]


def seed_regression(cfg: RegressionConfig) -> float:
    """The docs' loop: a jitted full-batch update called `steps` times from Python. Returns seconds (after compile)."""
    opt = make_optimizer(cfg)
    update = jax.jit(make_update(opt))
    x, y = make_data(cfg)
    params = init(jax.random.key(cfg.seed))
    opt_state = opt.init(params)
    jax.block_until_ready(update(params, opt_state, x, y))  # compile outside the timing
    t0 = time.perf_counter()
    for _ in range(cfg.steps):
        params, opt_state, _ = update(params, opt_state, x, y)
    jax.block_until_ready(params)
    return time.perf_counter() - t0


def ours_regression(cfg: RegressionConfig) -> float:
    """train_regression; seconds per cfg.steps, timed from the first chunk's report to the last."""
    writer = TimingWriter()
    train_regression(cfg, writer)
    return (writer.chunks[-1] - writer.chunks[0]) * cfg.steps / (cfg.steps - cfg.log_every)


def main(argv: list[str] | None = None) -> None:
    """Run both comparisons, alternating rounds so both loops see the same machine load; speedup last."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--epochs", type=int, default=3, help="epochs per MNIST loop and round; the first is not timed (min 2)"
    )
    p.add_argument("--rounds", type=int, default=2, help="alternating seed/ours rounds; the best epoch of each counts")
    p.add_argument("--dataset", default="fashion_mnist", choices=("fashion_mnist", "mnist"))
    p.add_argument("--data-dir", default=None)
    p.add_argument("--reg-points", type=int, default=1_000_000)
    p.add_argument("--reg-steps", type=int, default=1000)
    args = p.parse_args(argv)
    cfg = MnistConfig(dataset=args.dataset, data_dir=args.data_dir, epochs=max(2, args.epochs))
    print(
        f"device={jax.devices()[0]} jax={jax.__version__} MNIST-MLP {cfg.hidden} batch={cfg.batch_size} "
        f"dataset={cfg.dataset} steps/epoch={cfg.steps_per_epoch} log_every={cfg.log_every} rounds={args.rounds}"
    )

    reg = RegressionConfig(points=args.reg_points, steps=args.reg_steps)
    seed_r, ours_r = [], []
    for _ in range(args.rounds):
        seed_r.append(seed_regression(reg))
        ours_r.append(ours_regression(reg))
    print(
        f"regression {reg.points:,} points x {reg.steps} steps (best of {args.rounds}): seed loop {min(seed_r):.3f}s, "
        f"ours {min(ours_r):.3f}s, speedup {min(seed_r) / min(ours_r):.2f}x "
        f"(all seed {_r(seed_r)}, all ours {_r(ours_r)})"
    )

    seed_t, ours_t, compile_t, first_t = [], [], [], []
    for _ in range(args.rounds):
        times, first, seed_acc = seed_mnist(cfg)
        seed_t += times[1:]
        first_t.append(first)
        times, comp, ours_acc = ours_mnist(cfg)
        ours_t += times
        compile_t.append(comp)
    print(
        f"mnist seed loop: first step incl. compile {_r(first_t)}s; timed epochs {_r(seed_t)}s; "
        f"best {min(seed_t):.3f}s/epoch, median {statistics.median(seed_t):.3f}; test acc {seed_acc:.4f}"
    )
    print(
        f"mnist ours: compile {_r(compile_t)}s; timed epochs {_r(ours_t)}s; "
        f"best {min(ours_t):.3f}s/epoch, median {statistics.median(ours_t):.3f}; test acc {ours_acc:.4f}"
    )
    print(f"median-based speedup {statistics.median(seed_t) / statistics.median(ours_t):.2f}")
    print(f"speedup_vs_seed_loop={min(seed_t) / min(ours_t):.2f}")


def _r(values: list[float]) -> list[float]:
    return [round(float(v), 3) for v in values]


if __name__ == "__main__":
    main()
