"""Where an MNIST step's time goes: the engine's scanned chunk cut down one piece at a time.

    python -m benchmarks.step_costs [--rounds 6] [--chunk 100] [--ops 12]

Each row is a jitted chunk of `--chunk` steps of `lax.scan`, built as the engine builds it (the
chunk's slice of the epoch permutation, a per-step gather of the batch from the device-resident
training set, state donated), with a smaller step in the body:

  empty      the loop and the index slice alone (state passed through);
  gather     plus the batch gather (32 rows of 784 floats, the labels);
  forward    plus the MLP's forward pass and the loss;
  fwd+bwd    plus the backward pass and a plain SGD update (one fused multiply-add per leaf);
  optax.adam the task's step with `optax.adam` (two divides and a root per parameter);
  full step  the task's own step: its Adam (training/tasks/optimizers.py: one divide and a root).

The difference between two rows is that piece's cost (the last row's: our Adam against optax's).
Rows run round-robin and report their best chunk, so a shared machine's load hits them alike;
`uptime` is printed beside the table.
Synthetic data of MNIST's shapes: the arithmetic, not the values, decides the time.

`--ops N` then traces the full step's chunk with `jax.profiler` and prints its N costliest XLA
ops: the median duration of each op times its runs per step (medians, so a loaded machine's
preemptions barely move them), with the JAX operation each op came from (the HLO's metadata).
"""

from __future__ import annotations

import argparse
import collections
import glob
import os
import re
import tempfile
import time
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax

from training.tasks.mnist import MnistConfig, MnistTask, cross_entropy

N, BATCH = 60_000, 32
STEPS = N // BATCH


def _parts(task: MnistTask) -> dict[str, Callable[[Any, Any], Any]]:
    """Row name -> a step `(state, batch) -> (state, metrics)` doing part of the task's work."""

    def loss_and_grads(state: Any, batch: Any) -> Any:
        def loss_fn(params: Any) -> Any:
            return cross_entropy(task.model.apply({"params": params}, batch["image"]), batch["label"])

        return jax.value_and_grad(loss_fn)(state["params"])

    def sgd(state: Any, batch: Any) -> Any:
        loss, grads = loss_and_grads(state, batch)
        params = jax.tree.map(lambda p, g: p - 1e-3 * g, state["params"], grads)
        return {**state, "params": params}, {"loss": loss}

    def forward(state: Any, batch: Any) -> Any:
        logits = task.model.apply({"params": state["params"]}, batch["image"])
        return state, {"loss": cross_entropy(logits, batch["label"])}

    reference = MnistTask(task.cfg)
    reference.tx = optax.inject_hyperparams(optax.adam)(learning_rate=task.cfg.lr)
    return {
        "empty (loop + index slice)": lambda s, b: (s, {"loss": jnp.float32(0)}),
        "gather": lambda s, b: (s, {"loss": b["image"][0, 0] + b["label"][0]}),
        "forward": forward,
        "fwd+bwd+sgd": sgd,
        "step with optax.adam": reference.step,
        "full step (our adam)": task.step,
    }


def _chunk(step: Callable[[Any, Any], Any], length: int) -> Any:
    """The engine's chunk shape around `step`: index slice, per-step gather, scan, state donated."""

    def chunk(state: Any, train: Any, perm: Any, start: Any) -> Any:
        idx = jax.lax.dynamic_slice_in_dim(perm, start, length)
        return jax.lax.scan(lambda s, i: step(s, jax.tree.map(lambda a: a[i], train)), state, idx)

    return jax.jit(chunk, donate_argnums=(0,))


def _workload() -> tuple[MnistTask, dict[str, jax.Array], jax.Array]:
    """The MNIST task, N random training examples and STEPS batches of their indices."""
    task = MnistTask(MnistConfig(dataset="fashion_mnist", batch_size=BATCH))
    rng = np.random.default_rng(0)
    train = {
        "image": jnp.asarray(rng.random((N, 28 * 28), dtype=np.float32)),
        "label": jnp.asarray(rng.integers(0, 10, N).astype(np.int32)),
    }
    perm = jax.random.permutation(jax.random.key(0), N)[: STEPS * BATCH].reshape(STEPS, BATCH)
    return task, train, perm


def measure(rounds: int, length: int) -> dict[str, float]:
    """Row name -> best ms per step over `rounds` chunks of `length` steps, rows interleaved."""
    task, train, perm = _workload()
    fns = {name: _chunk(step, length) for name, step in _parts(task).items()}
    states = {name: task.init(jax.random.key(0)) for name in fns}
    best = dict.fromkeys(fns, float("inf"))
    for r in range(rounds + 1):  # round 0 compiles and warms up
        start = np.int32((r * length) % (STEPS - length))
        for name, fn in fns.items():
            t0 = time.perf_counter()
            states[name], metrics = fn(states[name], train, perm, start)
            jax.device_get(metrics)  # sync point: the chunk's metrics, as the engine fetches them
            if r:
                best[name] = min(best[name], (time.perf_counter() - t0) / length * 1e3)
    return best


def op_costs(length: int, chunks: int = 8) -> tuple[dict[str, float], dict[str, str]]:
    """(XLA op -> median us a step, XLA op -> its shape and JAX operation) of the full step's chunk, from a trace."""
    from jax._src.lib import _profile_data  # the profiler's own reader of its XSpace files

    task, train, perm = _workload()
    fn, state = _chunk(task.step, length), task.init(jax.random.key(0))
    hlo = fn.lower(state, train, perm, 0).compile().as_text()
    origin = {name: f"{shape} {op}" for name, shape, op in re.findall(r'%([\w.-]+) = (\S+) .*?op_name="([^"]+)"', hlo)}
    for _ in range(2):  # compile and warm up
        state, metrics = fn(state, train, perm, np.int32(0))
        jax.device_get(metrics)
    durations = collections.defaultdict(list)
    with tempfile.TemporaryDirectory(prefix="step-ops-") as folder:
        with jax.profiler.trace(folder):
            for r in range(chunks):
                state, metrics = fn(state, train, perm, np.int32(r * length % (STEPS - length)))
                jax.device_get(metrics)  # sync point: as the engine's
        trace = _profile_data.ProfileData.from_file(glob.glob(f"{folder}/**/*.xplane.pb", recursive=True)[0])
        for plane in trace.planes:
            for line in plane.lines:
                if line.name.startswith("tf_XLA"):  # XLA's CPU threads: one event per op run
                    for event in line.events:
                        durations[event.name].append(event.duration_ns / 1e3)
    steps = chunks * length
    ops = {name: float(np.median(d)) * len(d) / steps for name, d in durations.items() if name in origin}
    return ops, origin


def print_ops(count: int, length: int) -> None:
    """The `count` costliest ops of the full step, and the sum over all ops."""
    ops, origin = op_costs(length)
    print(f"\n{'XLA op':26s} {'us/step':>8s}   from (full step; sum of all {len(ops)} ops {sum(ops.values()):.1f} us)")
    for name, us in sorted(ops.items(), key=lambda kv: -kv[1])[:count]:
        where = re.sub(r"\{[\d,]*\}|jit\(chunk\)/while/body/|closed_call/", "", origin[name])
        print(f"{name:26s} {us:8.1f}   {where}")


def main() -> None:
    """Print the table: each row's best ms per step and what it adds to the row above."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=6, help="timed chunks per row (best is reported)")
    parser.add_argument("--chunk", type=int, default=100, help="steps per chunk (the CLI's log_every)")
    parser.add_argument("--ops", type=int, default=0, help="then print the full step's N costliest XLA ops")
    args = parser.parse_args()
    load = os.getloadavg()[0]
    best = measure(args.rounds, args.chunk)
    print(f"{'piece':28s} {'ms/step':>8s} {'adds':>8s}   (load {load:.1f}, {jax.devices()[0].platform})")
    previous = 0.0
    for name, ms in best.items():
        print(f"{name:28s} {ms:8.3f} {ms - previous:8.3f}")
        previous = ms
    if args.ops:
        print_ops(args.ops, args.chunk)


if __name__ == "__main__":
    main()
