"""Linear regression y = w*x + b by gradient descent: the JAX "stateful computations" example as a Task.

State is explicit: `Params` and the Optax optimizer state go into the pure `step` and come back
out. The whole data set stays on the device and every step is full-batch, so a million points
cost one host->device copy at the start and nothing per step. Each seed draws its own points, so
a population over seeds fits K different data sets (`per_member_data`).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from settings.regression import RegressionConfig
from training.tasks.base import Data, Task
from training.tasks.summaries import FitSummary, subsample


class Params(NamedTuple):
    """Model parameters: a scalar weight and bias."""

    weight: jax.Array
    bias: jax.Array


def init_params(key: jax.Array) -> Params:
    """Random initial parameters (as in the JAX docs)."""
    weight_key, bias_key = jax.random.split(key)
    return Params(jax.random.normal(weight_key, ()), jax.random.normal(bias_key, ()))


def loss(params: Params, x: jax.Array, y: jax.Array) -> jax.Array:
    """Mean squared error of the line over the data."""
    return jnp.mean((params.weight * x + params.bias - y) ** 2)


def make_data(cfg: RegressionConfig) -> tuple[jax.Array, jax.Array]:
    """Noisy points on the true line, drawn on the device from PRNG key cfg.seed.

    With the defaults (seed 42, 128 points) these are the JAX docs' points: the docs draw shape
    (128, 1), which yields the same numbers as the flat (128,) drawn here.
    """
    x_key, noise_key = jax.random.split(jax.random.key(cfg.seed))
    x = jax.random.normal(x_key, (cfg.points,))
    noise = jax.random.normal(noise_key, (cfg.points,)) * cfg.noise
    return x, x * cfg.true_weight + cfg.true_bias + noise


class RegressionTask(Task):
    """Fit y = w*x + b; the live page draws the line sliding onto the data."""

    name = "regression"
    title = "Linear regression"
    Config = RegressionConfig
    panels = ("fit", "loss")
    per_member_data = True
    last_value = ("loss", "regression/weight", "regression/bias")

    def __init__(self, cfg: RegressionConfig):
        super().__init__(cfg)
        self.tx = self.optimizer()

    def load_data(self) -> Data:
        x, y = make_data(self.cfg)
        return Data(train={"x": x, "y": y})

    def init(self, key: jax.Array) -> dict[str, Any]:
        params = init_params(key)
        return {"params": params, "opt_state": self.tx.init(params)}

    def step(self, state: dict[str, Any], batch: dict[str, jax.Array]) -> tuple[dict[str, Any], dict[str, jax.Array]]:
        """One full-batch step; "loss" is the loss of the parameters the step started from."""
        value, grads = jax.value_and_grad(loss)(state["params"], batch["x"], batch["y"])
        updates, opt_state = self.tx.update(grads, state["opt_state"], state["params"])
        params = optax.apply_updates(state["params"], updates)
        metrics = {"loss": value, "regression/weight": params.weight, "regression/bias": params.bias}
        return {"params": params, "opt_state": opt_state}, metrics

    def summarize(self, state: dict[str, Any], data: Data, final: bool) -> list[FitSummary]:
        """The current line over a subsample of the data."""
        x, y = data.train["x"], data.train["y"]
        idx = subsample(len(x))
        # sync point: the sample and two scalars, ~12 times a run
        xs, ys, w, b = jax.device_get((x[idx], y[idx], state["params"].weight, state["params"].bias))
        ends = np.array([xs.min(), xs.max()], dtype=np.float64)
        truth = self.cfg.true_weight * ends + self.cfg.true_bias
        return [FitSummary(np.asarray(xs), np.asarray(ys), ends, float(w) * ends + float(b), truth)]
