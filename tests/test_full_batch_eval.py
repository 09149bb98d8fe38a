"""A full-batch task (StepsConfig) with `evaluate` gets a test curve while it trains, not only a final number."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import optax

from training.runs.in_memory import train
from training.settings import with_default
from training.tasks.base import Data, StepsConfig, Task
from training.writers.base import MemoryWriter


@dataclass(frozen=True)
class LineConfig(StepsConfig):
    optimizer: str = with_default(StepsConfig, "optimizer", "sgd")
    lr: float = with_default(StepsConfig, "lr", 0.1)
    steps: int = with_default(StepsConfig, "steps", 400)
    log_every: int = with_default(StepsConfig, "log_every", 10)


class HeldOutLine(Task):
    """y = 3x fitted by SGD on 64 points, scored on 32 others."""

    name = "held_out_line"
    Config = LineConfig
    panels = ("loss",)

    def load_data(self) -> Data:
        x = jnp.linspace(-1, 1, 96)
        return Data(train={"x": x[::3], "y": 3 * x[::3]}, test={"x": x[1::3], "y": 3 * x[1::3]})

    def init(self, key: jax.Array) -> dict[str, Any]:
        params = {"w": jnp.zeros(())}
        return {"params": params, "opt": self.optimizer().init(params)}

    def step(self, state: dict[str, Any], batch: dict[str, jax.Array]) -> tuple[dict[str, Any], dict[str, Any]]:
        def mse(p: dict[str, jax.Array]) -> jax.Array:
            return jnp.mean((p["w"] * batch["x"] - batch["y"]) ** 2)

        loss, grads = jax.value_and_grad(mse)(state["params"])
        updates, opt = self.optimizer().update(grads, state["opt"], state["params"])
        return {"params": optax.apply_updates(state["params"], updates), "opt": opt}, {"loss": loss}

    def evaluate(self, state: dict[str, Any], test: dict[str, jax.Array]) -> dict[str, jax.Array]:
        return {"loss": jnp.mean((state["params"]["w"] * test["x"] - test["y"]) ** 2)}


def test_a_full_batch_task_logs_test_loss_while_it_trains() -> None:
    writer = MemoryWriter()
    result = train(HeldOutLine, LineConfig(), writer)[0]
    tested = [step for step, scalars in writer.scalars if "test/loss" in scalars]
    assert result.state == "finished" and tested[-1] == 400
    assert len(tested) >= 10 and tested[0] <= 40, tested  # a curve over the run, from its first tenth
    losses = [scalars["test/loss"] for _, scalars in writer.scalars if "test/loss" in scalars]
    assert losses[-1] < losses[0] / 10  # it learns, and the curve shows it
    assert result.final["test/loss"] == losses[-1]
