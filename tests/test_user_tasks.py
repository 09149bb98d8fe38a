"""What a user's task gets right by construction: a test curve for a full-batch task with `evaluate`,
and each population member's own data when `load_data` reads a setting the members vary."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import optax
import pytest

from jaxdash import Data, StepsConfig, Task, with_default
from runwriters.base import MemoryWriter
from training.runs.in_memory import train


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


class SeededLine(HeldOutLine):
    """Its points are drawn from cfg.seed, and it does not declare per_member_data."""

    name = "seeded_line"

    def load_data(self) -> Data:
        x_key, noise_key = jax.random.split(jax.random.key(self.cfg.seed))
        x = jax.random.uniform(x_key, (64,), minval=-1, maxval=1)
        return Data(train={"x": x, "y": 3 * x + 0.5 * jax.random.normal(noise_key, x.shape)})


def test_members_whose_seed_load_data_reads_train_on_their_own_data() -> None:
    assert not SeededLine.per_member_data
    alone = [train(SeededLine, LineConfig(seed=s))[0].final["train/loss"] for s in (0, 1)]
    together = [r.final["train/loss"] for r in train(SeededLine, [LineConfig(seed=0), LineConfig(seed=1)])]
    assert alone[0] != pytest.approx(alone[1], rel=1e-3)  # two data sets, two losses
    assert together == pytest.approx(alone, rel=1e-4)  # member 1 trained on seed 1's points, not member 0's


def test_members_that_vary_only_lr_share_one_copy_of_the_data() -> None:
    from training.engine.data_reads import load_members_data

    tasks = [SeededLine(LineConfig(lr=lr)) for lr in (0.1, 0.2)]
    datas, per_member = load_members_data(tasks, stacked=True)
    assert len(datas) == 1 and not per_member  # load_data read seed, which both share


def test_jaxdash_exports_the_task_api_on_first_use() -> None:
    """`from jaxdash import Task, ...` (README "Add your own task"), while `import jaxdash` alone loads none of it."""
    script = (
        "import sys, jaxdash\n"
        "print(sorted(m for m in ('training.tasks.base', 'training.tasks.summaries', 'jax') if m in sys.modules))\n"
        "from jaxdash import Task, TaskSettings, StepsConfig, EpochsConfig, setting, FitSummary, subsample\n"
        "import settings.task, training.tasks.base as base, training.tasks.summaries as summaries\n"
        "print(Task is base.Task, TaskSettings is settings.task.TaskSettings, FitSummary is summaries.FitSummary)\n"
        "print({'Task', 'Data', 'TaskSettings', 'ClassificationSummary'} <= set(jaxdash.__all__))"
    )
    root = Path(__file__).resolve().parent.parent
    done = subprocess.run([sys.executable, "-c", script], cwd=root, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split("\n")[:3] == ["[]", "True True True", "True"], done.stdout
