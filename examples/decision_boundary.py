"""A task that draws its own panel: a 2-D classifier's decision boundary, live, with no change to dashboard/.

Two interleaved half-moons, an MLP, and at every snapshot a plotly figure of the model's class-1
probability over the plane with the data on top (jaxdash.FigureSummary). The page shows
it in the media section of Live and Run detail, with a step slider over the snapshots.

python -m training examples/decision_boundary.py:DecisionBoundaryTask --steps 1500
JAXDASH_TASKS=examples.decision_boundary:DecisionBoundaryTask ./scripts/start.sh
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax
import plotly.graph_objects as go

from jaxdash import Data, FigureSummary, StepsConfig, Task, setting, subsample, with_default

GRID = 40  # cells a side of the probability map: 1,600 squares, light enough to redraw live
TAG = "model/decision_boundary"


@dataclass(frozen=True)
class MoonsConfig(StepsConfig):
    """An MLP separating two noisy half-moons in the plane."""

    lr: float = with_default(StepsConfig, "lr", 0.01)
    steps: int = with_default(StepsConfig, "steps", 1500)
    log_every: int = with_default(StepsConfig, "log_every", 100)
    points: int = setting(400, "Data points", "Points of the two half-moons together.", min=4, max=100_000)
    noise: float = setting(0.15, "Noise std", "Gaussian noise added to each point.", min=0)
    hidden: int = setting(32, "Hidden width", "Units in each of the two hidden layers.", min=1, max=1024)


def moons(key: jax.Array, n: int, noise: float) -> tuple[jax.Array, jax.Array]:
    """Two interleaved half-circles (x [n, 2], label [n] in {0, 1}), as scikit-learn's make_moons."""
    angle_key, noise_key = jax.random.split(key)
    label = jnp.arange(n) % 2
    t = jax.random.uniform(angle_key, (n,), minval=0, maxval=jnp.pi)
    x = jnp.where(
        label[:, None] == 0, jnp.stack([jnp.cos(t), jnp.sin(t)], 1), jnp.stack([1 - jnp.cos(t), 0.5 - jnp.sin(t)], 1)
    )
    return x + noise * jax.random.normal(noise_key, x.shape), label


class MLP(nn.Module):
    """2 -> hidden -> hidden -> 1 logit."""

    hidden: int

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        x = nn.relu(nn.Dense(self.hidden)(x))
        return nn.Dense(1)(nn.relu(nn.Dense(self.hidden)(x)))[:, 0]


def boundary_figure(xs: np.ndarray, ys: np.ndarray, gx: np.ndarray, gy: np.ndarray, prob: np.ndarray) -> go.Figure:
    """The class-1 probability on a grid (square markers: plotly's basic bundle draws them) and the data."""
    fig = go.Figure()
    fig.add_scatter(
        x=gx, y=gy, mode="markers", name="P(class 1)", hoverinfo="skip",
        marker={"symbol": "square", "size": 9, "color": prob, "colorscale": "RdBu", "cmin": 0, "cmax": 1,
                "opacity": 0.45, "colorbar": {"title": "P(1)"}},
    )  # fmt: skip
    for label, color in ((0, "#b2182b"), (1, "#2166ac")):
        keep = ys == label
        fig.add_scatter(
            x=xs[keep, 0], y=xs[keep, 1], mode="markers", name=f"class {label}", marker={"color": color, "size": 5}
        )
    fig.update_layout(height=420, margin={"l": 30, "r": 10, "t": 30, "b": 30}, legend={"orientation": "h"})
    fig.update_yaxes(scaleanchor="x")
    return fig


class DecisionBoundaryTask(Task):
    """Classify two half-moons; the page draws the loss, accuracy and the task's own boundary panel."""

    name = "decision_boundary"
    title = "Two moons (decision boundary)"
    Config = MoonsConfig
    panels = ("loss", "accuracy")

    def __init__(self, cfg: MoonsConfig):
        super().__init__(cfg)
        self.model = MLP(cfg.hidden)
        self.tx = self.optimizer()

    def load_data(self) -> Data:
        x, y = moons(jax.random.fold_in(jax.random.key(self.cfg.seed), 1), self.cfg.points, self.cfg.noise)
        return Data(train={"x": x, "y": y})

    def init(self, key: jax.Array) -> dict[str, Any]:
        params = self.model.init(key, jnp.zeros((1, 2)))["params"]
        return {"params": params, "opt_state": self.tx.init(params)}

    def step(self, state: dict[str, Any], batch: dict[str, jax.Array]) -> tuple[dict[str, Any], dict[str, jax.Array]]:
        """One full-batch step on the logistic loss; "loss" and "acc" are before the update."""

        def loss_fn(p: Any) -> tuple[jax.Array, jax.Array]:
            logits = self.model.apply({"params": p}, batch["x"])
            loss = optax.sigmoid_binary_cross_entropy(logits, batch["y"].astype(jnp.float32)).mean()
            return loss, jnp.mean((logits > 0) == (batch["y"] == 1))

        (loss, acc), grads = jax.value_and_grad(loss_fn, has_aux=True)(state["params"])
        updates, opt_state = self.tx.update(grads, state["opt_state"], state["params"])
        return {"params": optax.apply_updates(state["params"], updates), "opt_state": opt_state}, {
            "loss": loss,
            "acc": acc,
        }

    def summarize(self, state: dict[str, Any], data: Data, final: bool) -> list[FigureSummary]:
        """The decision boundary over the data's bounding box, as a plotly figure."""
        x, y = data.train["x"], data.train["y"]
        lo, hi = jnp.min(x, 0) - 0.5, jnp.max(x, 0) + 0.5
        gx, gy = jnp.meshgrid(jnp.linspace(lo[0], hi[0], GRID), jnp.linspace(lo[1], hi[1], GRID))
        grid = jnp.stack([gx.ravel(), gy.ravel()], 1)
        prob = jax.nn.sigmoid(self.model.apply({"params": state["params"]}, grid))
        idx = subsample(self.cfg.points, 1000)
        xs, ys, g, p = (np.asarray(a) for a in jax.device_get((x[idx], y[idx], grid, prob)))  # sync point
        return [FigureSummary(TAG, boundary_figure(xs, ys, g[:, 0], g[:, 1], p))]
