"""MNIST training speed in one run: the seed's loop, a host-batch loop, our engine through the CLI, the matmul bound.

    python -m benchmarks.train_speed [--epochs 3] [--no-variants]

Fashion-MNIST 60k, MLP 784-128-128-10, Adam 1e-3, batch 32 (1875 steps per epoch), all on this CPU.
(a) seed: the Flax tutorial loop written line for line: the data as device arrays, a per-step
    `@jax.jit train_step(state, idxs)` gathering the batch from the global arrays, the per-step
    slice `perms[i]` and running-mean update of loss and accuracy, a test evaluation per epoch.
(b) host loop: the same jitted step fed host numpy batches (one host->device copy per step).
(c) ours: `python -m training mnist --dataset fashion_mnist` in a subprocess with every writer on
    (run store, TensorBoard, W&B offline). Its epoch time is the gap between consecutive epoch-end
    records' `wall` stamps in metrics.jsonl: steady state, start-up and compile excluded, every
    writer call, evaluation, histogram and checkpoint of the epoch included.
(d) bound: the epoch's matmul FLOPs (3 x forward FLOPs of 784-128-128-10 x 32 x 1875, forward +
    backward) / the GFLOP/s of a large f32 matmul measured here, on all threads (the goal's
    bound) and, in a fresh process, on the one XLA thread (c) trains on unless told otherwise.
(a) and (b) time every epoch after the first (which compiles); all report the best epoch, as
the machine is shared, and the median. Variants then rerun (c) with one change each (XLA CPU
threading flags, chunk length, checkpoint cadence, writers off, the scan's unroll) and print what it changed.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax.training import train_state

from runstore import run_folder
from training.data import load_dataset
from training.tasks.mnist import MLP, MnistConfig, MnistTask

BATCH, HIDDEN = 32, (128, 128)
STEPS = 60_000 // BATCH  # per epoch
BLOCK = 100  # steps per timed stretch: the CLI's default chunk (log_every)
SINGLE_THREAD = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
ALL_THREADS = {"JAXDASH_XLA_THREADS": "all"}  # the CLI runs XLA on one thread unless told (warm_worker.py)
VARIANTS = {  # name: (extra CLI flags, extra environment)
    "xla on all threads": ([], ALL_THREADS),
    "ckpt only at epoch end": (["--ckpt-every", "0"], {}),
    "chunk 625 steps": (["--log-every", "625"], {}),
    "writers off": (["--no-tensorboard", "--wandb", "disabled"], {}),
    "the first three together": (["--ckpt-every", "0", "--log-every", "625"], ALL_THREADS),
    "scan unroll 4": ([], {"JAXDASH_SCAN_UNROLL": "4"}),
    "scan unroll 16": ([], {"JAXDASH_SCAN_UNROLL": "16"}),
}


def seed_loop(x: np.ndarray, y: np.ndarray, tx_: np.ndarray, ty: np.ndarray, epochs: int) -> Timing:
    """(a) The tutorial loop, line for line (plus a clock read every BLOCK steps)."""
    train_images, train_labels = jnp.asarray(x), jnp.asarray(y)  # device arrays, once
    test_images, test_labels = jnp.asarray(tx_), jnp.asarray(ty)
    model = MLP(HIDDEN)
    params = model.init(jax.random.key(0), jnp.ones((1, 784)))["params"]
    state = train_state.TrainState.create(apply_fn=model.apply, params=params, tx=optax.adam(1e-3))

    @jax.jit
    def train_step(state, idxs):
        images, labels = train_images[idxs], train_labels[idxs]  # gather from the global arrays

        def loss_fn(params):
            logits = state.apply_fn({"params": params}, images)
            return optax.softmax_cross_entropy_with_integer_labels(logits, labels).mean(), logits

        (loss, logits), grads = jax.value_and_grad(loss_fn, has_aux=True)(state.params)
        return state.apply_gradients(grads=grads), loss, jnp.mean(jnp.argmax(logits, -1) == labels)

    @jax.jit
    def eval_step(params):
        return jnp.mean(jnp.argmax(model.apply({"params": params}, test_images), -1) == test_labels)

    steps, key, timing = len(x) // BATCH, jax.random.key(1), Timing()
    for _ in range(epochs):
        t0 = timing.start()
        key, perm_key = jax.random.split(key)
        perms = jax.random.permutation(perm_key, len(x))[: steps * BATCH].reshape(steps, BATCH)
        train_loss, train_acc = 0.0, 0.0
        for i in range(steps):
            idxs = perms[i]  # per-step slice (a device op)
            state, loss, acc = train_step(state, idxs)
            train_loss += (loss - train_loss) / (i + 1)  # running means (device ops)
            train_acc += (acc - train_acc) / (i + 1)
            if (i + 1) % BLOCK == 0:
                timing.block(train_loss)  # sync point: as a tutorial's log line every BLOCK steps
        float(train_loss), float(eval_step(state.params))  # sync point: the epoch's numbers
        timing.epoch(t0)
    return timing


def host_loop(x: np.ndarray, y: np.ndarray, epochs: int) -> Timing:
    """(b) Our task's step, jitted, fed host numpy batches."""
    task = MnistTask(MnistConfig(dataset="fashion_mnist", batch_size=BATCH))
    state, step = task.init(jax.random.key(0)), jax.jit(task.step, donate_argnums=(0,))
    rng, steps, timing = np.random.default_rng(0), len(x) // BATCH, Timing()
    for _ in range(epochs):
        t0, perm, pending = timing.start(), rng.permutation(len(x)), []
        for i in range(steps):
            idx = perm[i * BATCH : (i + 1) * BATCH]
            state, metrics = step(state, {"image": x[idx], "label": y[idx]})  # host->device copy per step
            pending.append(metrics)
            if (i + 1) % BLOCK == 0 or i == steps - 1:
                jax.device_get(pending)  # sync point: fetch the logged metrics, as a tutorial loop would
                pending = []
                timing.block()
        timing.epoch(t0)
    return timing


class Timing:
    """Seconds of each epoch and of each BLOCK-step stretch within the epochs after the first (compile)."""

    def __init__(self) -> None:
        self.epochs: list[float] = []
        self.blocks: list[float] = []
        self.last = 0.0

    def start(self) -> float:
        """Mark the start of an epoch; returns the time."""
        self.last = time.perf_counter()
        return self.last

    def block(self, value: object = None) -> None:
        """Mark the end of a BLOCK-step stretch (after `value` is computed)."""
        if value is not None:
            jax.block_until_ready(value)
        now = time.perf_counter()
        if self.epochs:  # the first epoch compiles and warms up
            self.blocks.append(now - self.last)
        self.last = now

    def epoch(self, t0: float) -> None:
        """Mark the end of an epoch that started at `t0`."""
        self.epochs.append(time.perf_counter() - t0)

    def steady(self, steps: int) -> float:
        """Seconds per epoch at the best BLOCK-step rate seen (what a quiet machine gives)."""
        return min(self.blocks) * steps / BLOCK


def matmul_gflops(n: int = 2048, repeats: int = 5) -> float:
    """GFLOP/s of an n x n f32 matmul (best of `repeats`)."""
    a = jax.random.normal(jax.random.key(0), (n, n), jnp.float32)
    mm = jax.jit(lambda a, b: a @ b)
    mm(a, a).block_until_ready()
    best = min(_timed(lambda: mm(a, a).block_until_ready()) for _ in range(repeats))
    return 2 * n**3 / best / 1e9


def matmul_gflops_one_thread() -> float:
    """`matmul_gflops()` in a fresh process whose XLA runs on one thread, as the CLI's training does."""
    code = "from benchmarks.train_speed import matmul_gflops; print(matmul_gflops())"
    env = {**os.environ, "XLA_FLAGS": SINGLE_THREAD}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    return float(out.stdout.split()[-1]) if out.returncode == 0 else float("nan")


def epoch_gflop(steps: int, exact: bool = False) -> float:
    """Matmul GFLOPs of one epoch of 784-128-128-10 at BATCH: forward + backward = 3x forward.

    exact: without the first layer's input gradient, which backprop never computes (2.15x forward).
    """
    sizes = (784, *HIDDEN, 10)
    flops = [2 * BATCH * a * b for a, b in zip(sizes[:-1], sizes[1:], strict=True)]
    total = 3 * sum(flops) - (flops[0] if exact else 0)
    return total * steps / 1e9


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def ours_cli(epochs: int, flags: list[str], env: dict[str, str], root: Path) -> dict:
    """(c) `python -m training mnist` with all writers on; epoch seconds from metrics.jsonl's wall stamps."""
    cmd = [
        sys.executable,
        "-m",
        "training",
        "mnist",
        "--dataset",
        "fashion_mnist",
        "--epochs",
        str(epochs),
        "--batch-size",
        str(BATCH),
        "--runs-root",
        str(root),
        "--wandb",
        "offline",
        "--quiet",
        *flags,
    ]
    t0 = time.perf_counter()
    out = subprocess.run(cmd, env={**_quiet_env(root), **env}, capture_output=True, text=True, timeout=600)
    wall = time.perf_counter() - t0
    if out.returncode:
        return {"error": out.stderr.strip().splitlines()[-1:]}
    run_dir = Path(json.loads(out.stdout.splitlines()[0])["run_dir"])
    lines = (run_dir / run_folder.RECORDS).read_text().splitlines()
    records = sorted(
        (r for r in map(json.loads, lines) if "train/loss" in r and r["step"] > 0), key=lambda r: r["step"]
    )
    ends = [r["wall"] for r in records if "epoch/train_loss" in r]
    per_step = [
        (b["wall"] - a["wall"]) / (b["step"] - a["step"])  # chunks within an epoch, writers included
        for a, b in zip(records, records[1:], strict=False)
        if "epoch/train_loss" not in a | b
    ]
    status = json.loads((run_dir / run_folder.STATUS).read_text())
    return {
        "epochs": list(np.diff(ends)),
        "steady": min(per_step) * STEPS if per_step else float("nan"),
        "process": wall,
        "compile": status.get("compile_seconds", 0.0),
        "train": status["wall_seconds"] - status.get("compile_seconds", 0.0),
        "acc": status["final"].get("test/acc"),
    }


def _quiet_env(root: Path) -> dict[str, str]:
    env = dict(
        os.environ,
        WANDB_MODE="offline",
        WANDB_SILENT="true",
        WANDB_DISABLE_GIT="true",
        WANDB_DIR=str(root),
        WANDB_CACHE_DIR=str(root / ".wc"),
        WANDB_CONFIG_DIR=str(root / ".wcfg"),
        WANDB_DATA_DIR=str(root / ".wd"),
        WANDB_BASE_URL="http://127.0.0.1:9",
    )
    env.pop("WANDB_API_KEY", None)
    return env


def _line(name: str, epochs: list[float], steady: float) -> str:
    return (
        f"{name:<34s} best {min(epochs):.3f} s/epoch, median {statistics.median(epochs):.3f} "
        f"({_r(epochs)}); steady {steady:.3f} s/epoch"
    )


def _r(values: list[float]) -> list[float]:
    return [round(float(v), 3) for v in values]


def report(seed: Timing, host: Timing, ours: dict, gflops: float, gflops_one: float, epochs: int) -> None:
    """Print (a)-(d) and the ratios (best whole epochs; the steady rates in brackets)."""
    bound, exact = epoch_gflop(STEPS) / gflops, epoch_gflop(STEPS, exact=True) / gflops
    one = epoch_gflop(STEPS) / gflops_one
    print(_line("(a) seed loop (device, per-step)", seed.epochs, seed.steady(STEPS)))
    print(_line("(b) per-step loop, host batches", host.epochs, host.steady(STEPS)))
    print(_line("(c) ours, CLI, all writers", ours["epochs"], ours["steady"]))
    print(
        f"    (c) process wall {ours['process']:.1f} s for {epochs} epochs; status.json wall_seconds - compile "
        f"= {ours['train']:.2f} s (from engine start: data loading included); compile {ours['compile']:.2f} s; "
        f"test acc {ours['acc']:.4f}"
    )
    print(
        f"(d) bound: {epoch_gflop(STEPS):.1f} GFLOP/epoch (3x forward) / {gflops:.1f} GFLOP/s (2048^2 f32 matmul) "
        f"= {bound:.3f} s/epoch; without the unneeded input gradient of layer 1: {exact:.3f} s/epoch"
    )
    print(
        f"    one XLA thread, as (c) trains: {gflops_one:.1f} GFLOP/s = {one:.3f} s/epoch; "
        f"ours_over_one_thread_bound={min(ours['epochs']) / one:.2f}x ({ours['steady'] / one:.2f}x steady)"
    )
    best = min(ours["epochs"])
    print(f"    (c) overhead per epoch (best epoch - steady): {best - ours['steady']:.3f} s")
    print(
        f"ours_vs_seed={min(seed.epochs) / best:.2f}x ({seed.steady(STEPS) / ours['steady']:.2f}x steady) "
        f"ours_vs_host_loop={min(host.epochs) / best:.2f}x ({host.steady(STEPS) / ours['steady']:.2f}x steady) "
        f"ours_over_bound={best / bound:.2f}x ({ours['steady'] / bound:.2f}x steady) "
        f"[goal: >= 2.0x seed, <= 2x bound]",
        flush=True,
    )


def variants(epochs: int, root: Path, base: dict) -> None:
    """Rerun (c) with one change each, then the base again: the machine's load drifts."""
    results = {}
    for name, (flags, env) in VARIANTS.items():
        results[name] = ours_cli(epochs, flags, env, root / name.replace(" ", "-"))
    again = ours_cli(epochs, [], {}, root / "base-again")
    ref_epoch = min(base["epochs"] + again.get("epochs", []))
    ref_steady = min(base["steady"], again.get("steady", base["steady"]))
    print(
        f"variants of (c); base = best of its two runs: epoch {ref_epoch:.3f} s, steady {ref_steady:.3f} s "
        "(overhead = best epoch - steady: evaluation, checkpoints, histograms, writer calls)"
    )
    for name, got in results.items():
        if "error" in got:
            print(f"  {name:<26s} failed: {got['error']}")
            continue
        epoch = min(got["epochs"])
        print(
            f"  {name:<26s} best epoch {epoch:.3f} s ({ref_epoch / epoch:.2f}x the base's speed), steady "
            f"{got['steady']:.3f} s ({ref_steady / got['steady']:.2f}x), overhead {epoch - got['steady']:.3f} s "
            f"(base {ref_epoch - ref_steady:.3f})"
        )


def main(argv: list[str] | None = None) -> None:
    """Measure (a)-(d), print the ratios, then the variants of (c)."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=3, help="epochs per loop; the first is not timed (min 2)")
    p.add_argument("--variant-epochs", type=int, default=2, help="epochs per variant run (min 2)")
    p.add_argument("--no-variants", action="store_true", help="skip the variants of (c)")
    args = p.parse_args(argv)
    epochs = max(2, args.epochs)
    train_x, train_y, test_x, test_y = load_dataset("fashion_mnist")
    x = train_x.reshape(len(train_x), -1).astype(np.float32) / 255.0
    tx_ = test_x.reshape(len(test_x), -1).astype(np.float32) / 255.0
    print(
        f"device={jax.devices()[0]} cpus={os.cpu_count()} load={os.getloadavg()[0]:.1f} jax={jax.__version__} "
        f"fashion_mnist {len(x)} MLP 784-{'-'.join(map(str, HIDDEN))}-10 batch={BATCH} steps/epoch={STEPS} "
        f"epochs={epochs}",
        flush=True,
    )
    with tempfile.TemporaryDirectory(prefix="train-speed-") as tmp:
        root = Path(tmp)
        ours = ours_cli(epochs, [], {}, root / "base")
        if "error" in ours:
            raise SystemExit(f"our CLI run failed: {ours['error']}")
        seed = seed_loop(x, train_y, tx_, test_y, epochs)
        host = host_loop(x, train_y, epochs)
        seed.epochs, host.epochs = seed.epochs[1:], host.epochs[1:]  # the first epoch compiles
        report(seed, host, ours, matmul_gflops(), matmul_gflops_one_thread(), epochs)
        if not args.no_variants:
            variants(max(2, args.variant_epochs), root, ours)
    print(f"load at the end: {os.getloadavg()[0]:.1f} (on {os.cpu_count()} cpus)")


if __name__ == "__main__":
    main()
