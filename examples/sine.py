"""Bring your own task: a Flax MLP fitting a noisy sine curve y = sin(x) + noise, full batch.

python -m training examples/sine.py:SineTask --hidden 64 --steps 3000
python -m training examples.sine:SineTask --population lr=0.003,0.01,0.03
JAXDASH_TASKS=examples.sine:SineTask ./scripts/start.sh     # offered on the New run page
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax

from jaxdash import Data, FitSummary, StepsConfig, Task, setting, subsample, with_default


@dataclass(frozen=True)
class SineConfig(StepsConfig):
    """An MLP fitted to noisy samples of sin(x) on [-2pi, 2pi]."""

    lr: float = with_default(StepsConfig, "lr", 0.01)
    steps: int = with_default(StepsConfig, "steps", 2000)
    log_every: int = with_default(StepsConfig, "log_every", 50)
    points: int = setting(256, "Data points", "Noisy samples of the sine curve.", min=2, max=1_000_000)
    noise: float = setting(0.1, "Noise std", "Standard deviation of the Gaussian noise added to y.", min=0)
    hidden: int = setting(64, "Hidden width", "Units in each of the two hidden layers.", min=1, max=4096)


class MLP(nn.Module):
    """1 -> hidden -> hidden -> 1 with tanh."""

    hidden: int

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        x = nn.tanh(nn.Dense(self.hidden)(x[:, None]))
        return nn.Dense(1)(nn.tanh(nn.Dense(self.hidden)(x)))[:, 0]


class SineTask(Task):
    """Fit sin(x); the live page draws the curve bending onto the data, and the loss."""

    name = "sine"
    title = "Noisy sine (MLP)"
    Config = SineConfig
    panels = ("fit", "loss")
    per_member_data = True  # each seed draws its own points

    def __init__(self, cfg: SineConfig):
        super().__init__(cfg)
        self.model = MLP(cfg.hidden)
        self.tx = self.optimizer()  # lr lives in the optimizer state, so populations share one program

    def load_data(self) -> Data:
        x_key, noise_key = jax.random.split(jax.random.fold_in(jax.random.key(self.cfg.seed), 1))
        x = jax.random.uniform(x_key, (self.cfg.points,), minval=-2 * jnp.pi, maxval=2 * jnp.pi)
        return Data(train={"x": x, "y": jnp.sin(x) + self.cfg.noise * jax.random.normal(noise_key, x.shape)})

    def init(self, key: jax.Array) -> dict[str, Any]:
        params = self.model.init(key, jnp.zeros((1,)))["params"]
        return {"params": params, "opt_state": self.tx.init(params)}

    def step(self, state: dict[str, Any], batch: dict[str, jax.Array]) -> tuple[dict[str, Any], dict[str, jax.Array]]:
        """One full-batch step on the mean squared error; "loss" is the loss before the update."""
        mse = lambda p: jnp.mean((self.model.apply({"params": p}, batch["x"]) - batch["y"]) ** 2)  # noqa: E731
        loss, grads = jax.value_and_grad(mse)(state["params"])
        updates, opt_state = self.tx.update(grads, state["opt_state"], state["params"])
        return {"params": optax.apply_updates(state["params"], updates), "opt_state": opt_state}, {"loss": loss}

    def summarize(self, state: dict[str, Any], data: Data, final: bool) -> list[FitSummary]:
        """The model's curve on a sorted grid over the data, with the true sine."""
        x, y, idx = data.train["x"], data.train["y"], subsample(self.cfg.points)
        grid = jnp.linspace(-2 * jnp.pi, 2 * jnp.pi, 200)
        pred = self.model.apply({"params": state["params"]}, grid)
        xs, ys, gx, gy = (np.asarray(a, np.float64) for a in jax.device_get((x[idx], y[idx], grid, pred)))  # sync point
        return [FitSummary(xs, ys, gx, gy, np.sin(gx))]
