"""Linear regression y = w*x + b by gradient descent: the JAX "stateful computations" example, chunked.

State is explicit: `Params` and the Optax optimizer state go into the pure `update` and come back
out. The whole data set stays on the device and every step is full-batch, so a million points
cost one host->device copy at the start and nothing per step.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from training.checkpoint import Checkpointer
from training.config import RegressionConfig
from training.loop import ChunkCompiler, Clock, TraceCounter, chunk_lengths, report_chunk
from training.result import TrainResult
from training.writers.base import MetricWriter, Progress, RegressionSnapshot

SAMPLE_POINTS = 2000  # most points handed to writers for the fitted-line plot
SNAPSHOTS = 10  # fitted-line snapshots spread over the run, besides the first and the last


class Params(NamedTuple):
    """Model parameters: a scalar weight and bias."""

    weight: jax.Array
    bias: jax.Array


def init(key: jax.Array) -> Params:
    """Random initial parameters (as in the JAX docs)."""
    weight_key, bias_key = jax.random.split(key)
    return Params(jax.random.normal(weight_key, ()), jax.random.normal(bias_key, ()))


def loss(params: Params, x: jax.Array, y: jax.Array) -> jax.Array:
    """Mean squared error of the line over the data."""
    pred = params.weight * x + params.bias
    return jnp.mean((pred - y) ** 2)


def make_optimizer(cfg: RegressionConfig) -> optax.GradientTransformation:
    """Optax optimizer named by cfg.optimizer ("sgd" matches the docs' manual update exactly).

    The learning rate lives in the optimizer state (`optax.inject_hyperparams`), not in the
    compiled code, so a population can vmap over K learning rates with one program.
    """
    return optax.inject_hyperparams(optax.adam if cfg.optimizer == "adam" else optax.sgd)(learning_rate=cfg.lr)


def make_update(optimizer: optax.GradientTransformation) -> Callable[..., tuple[Params, Any, dict[str, jax.Array]]]:
    """Pure update `(params, opt_state, x, y) -> (params, opt_state, metrics)`.

    metrics["loss"] is the loss of the parameters the step started from (it comes free with the
    gradient); "weight" and "bias" are the parameters after the step.
    """

    def update(params: Params, opt_state: Any, x: jax.Array, y: jax.Array):
        value, grads = jax.value_and_grad(loss)(params, x, y)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        params = optax.apply_updates(params, updates)
        return params, opt_state, {"loss": value, "weight": params.weight, "bias": params.bias}

    return update


def make_data(cfg: RegressionConfig, seed: jax.Array | int | None = None) -> tuple[jax.Array, jax.Array]:
    """Noisy points on the true line, drawn on the device from PRNG key `seed` (default cfg.seed).

    With the defaults (seed 42, 128 points) these are the JAX docs' points: the docs draw shape
    (128, 1), which yields the same numbers as the flat (128,) drawn here. `seed` may be traced
    (a population draws each member's data inside one vmapped call).
    """
    x_key, noise_key = jax.random.split(jax.random.key(cfg.seed if seed is None else seed))
    x = jax.random.normal(x_key, (cfg.points,))
    noise = jax.random.normal(noise_key, (cfg.points,)) * cfg.noise
    return x, x * cfg.true_weight + cfg.true_bias + noise


def make_chunk(update: Callable[..., Any], length: int) -> Callable[..., Any]:
    """`length` full-batch updates in one `lax.scan`: (state, x, y) -> (state, metrics stacked [length])."""

    def chunk(state: tuple[Params, Any], x: jax.Array, y: jax.Array):
        def body(carry, _):
            params, opt_state, metrics = update(*carry, x, y)
            return (params, opt_state), metrics

        return jax.lax.scan(body, state, None, length=length)

    return chunk


def _sample(cfg: RegressionConfig, x: jax.Array, y: jax.Array) -> tuple[np.ndarray, np.ndarray]:
    """Evenly strided subsample (deterministic, no RNG) brought to the host once."""
    idx = np.linspace(0, cfg.points - 1, min(cfg.points, SAMPLE_POINTS)).round().astype(np.int32)
    return jax.device_get((x[idx], y[idx]))  # sync point: once per run


def train_regression(
    cfg: RegressionConfig,
    writer: MetricWriter,
    should_stop: Callable[[], bool] = lambda: False,
    ckpt: Checkpointer | None = None,
) -> TrainResult:
    """Fit the line, logging each chunk of cfg.log_every steps.

    Args:
      cfg: validated regression config.
      writer: receives "train/loss", "regression/weight", "regression/bias" per chunk and
        fitted-line snapshots at step 0, ~10 times during the run and at the end.
      should_stop: polled between chunks; True ends the run early with state "stopped".
      ckpt: saves every cfg.ckpt_every steps, when stopped and at the end; with a `resume_step`,
        training resumes from that checkpoint (same steps and values as an uninterrupted run).

    Returns:
      TrainResult with final {"train/loss", "regression/weight", "regression/bias"} of the final params.

    Raises:
      Diverged: a step's loss was NaN/inf (that chunk's scalars are written first).
    """
    clock = Clock()
    traces = TraceCounter()
    optimizer = make_optimizer(cfg)
    x, y = make_data(cfg)
    params = init(jax.random.key(cfg.seed))
    state = (params, optimizer.init(params))
    compiler = ChunkCompiler(lambda n: make_chunk(make_update(optimizer), n), traces)
    final_loss = jax.jit(traces.wrap("loss", loss))
    x_sample, y_sample = _sample(cfg, x, y)

    def snapshot(step: int, w: float, b: float) -> None:
        snap = RegressionSnapshot(x_sample, y_sample, float(w), float(b), cfg.true_weight, cfg.true_bias)
        writer.write_regression(step, snap)

    step = 0
    if ckpt is not None and ckpt.resume_step is not None:
        arrays, meta = ckpt.restore({"params": state[0], "opt_state": state[1]})
        state, step = (arrays["params"], arrays["opt_state"]), meta["step"]
        clock.start -= meta["wall_seconds"]  # wall time continues where the checkpoint left it
    w, b = map(float, jax.device_get((state[0].weight, state[0].bias)))  # sync point: initial line, once
    if step == 0:
        snapshot(0, w, b)
    plan = chunk_lengths(cfg.steps, cfg.log_every)
    snap_every = max(1, len(plan) // SNAPSHOTS)
    stopped = False
    # Checkpoints sit on chunk boundaries, so the chunks done are exactly those of `step` steps.
    for i in range(len(chunk_lengths(step, cfg.log_every)), len(plan)):
        length = plan[i]
        fn = compiler.get(length, state, x, y)
        state, m = clock.run_chunk(fn, length, state, x, y)
        first, step = step + 1, step + length
        w, b = float(m["weight"][-1]), float(m["bias"][-1])
        scalars = {"train/loss": float(m["loss"][-1]), "regression/weight": w, "regression/bias": b}
        progress = Progress(
            step=step,
            total_steps=cfg.steps,
            wall_seconds=clock.elapsed(),
            compile_seconds=compiler.compile_seconds,
            steps_per_sec=clock.steps_per_sec,
        )
        report_chunk(writer, step, scalars, progress, m["loss"], first, cfg.lr)
        stopped = step < cfg.steps and should_stop()
        if (i + 1) % snap_every == 0 or i == len(plan) - 1 or stopped:
            snapshot(step, w, b)
        if ckpt is not None:
            meta = {"step": step, "wall_seconds": clock.elapsed()}
            ckpt.maybe_save(step, {"params": state[0], "opt_state": state[1]}, meta, force=stopped or step == cfg.steps)
        if stopped:
            break
    params = state[0]
    final = {
        "train/loss": float(final_loss(params, x, y)),  # sync point: loss of the final params, once
        "regression/weight": w,
        "regression/bias": b,
    }
    extra = {
        "compile_seconds": compiler.compile_seconds,
        "steps_per_sec": clock.steps_per_sec,
        "traces": dict(traces.counts),
        "wall_seconds": clock.elapsed(),
    }
    return TrainResult(state="stopped" if stopped else "finished", final=final, steps=step, extra=extra)
