"""The regression task's settings without its model code (no JAX): what the page reads to draw its form.

training/tasks/regression.py holds the model and re-exports `RegressionConfig`; `SETTINGS` is what
the registry (settings.registry) lists under "regression", naming that Task class by spec so the page
never imports it.
"""

from __future__ import annotations

from dataclasses import dataclass

from settings.fields import setting, with_default
from settings.task import StepsConfig, TaskSettings


@dataclass(frozen=True)
class RegressionConfig(StepsConfig):
    """Linear regression y = w*x + b fitted by gradient descent (the JAX seed's defaults)."""

    seed: int = with_default(StepsConfig, "seed", 42)
    optimizer: str = with_default(StepsConfig, "optimizer", "sgd")
    lr: float = with_default(StepsConfig, "lr", 0.005)
    log_every: int = with_default(StepsConfig, "log_every", 10)
    ckpt_every: int = with_default(StepsConfig, "ckpt_every", 200)
    points: int = setting(128, "Data points", "Number of (x, y) samples.", min=2, max=50_000_000)
    noise: float = setting(0.5, "Noise std", "Standard deviation of the Gaussian noise added to y.", min=0)
    true_weight: float = setting(2.0, "True weight", "w of the line that generates the data.")
    true_bias: float = setting(-1.0, "True bias", "b of the line that generates the data.")


SETTINGS = TaskSettings(
    name="regression",
    title="Linear regression",
    Config=RegressionConfig,
    panels=("fit", "loss"),
    task="training.tasks.regression:RegressionTask",
)
