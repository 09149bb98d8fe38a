"""What a task declares without its model code: the configs every task has, its names and panels.

A task's typed config is a frozen dataclass of `setting(...)` fields built on BaseConfig (StepsConfig for
full-batch tasks, EpochsConfig for mini-batch ones); `TaskSettings` names a task, its config and its live
panels, and points at its Task class by spec, so the page draws the form without importing the model.
training.tasks.base.Task (the model's pure pieces) extends TaskDeclaration. No JAX here: the page imports it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from settings.fields import setting

PANELS = ("fit", "loss", "accuracy")  # live panels the page knows how to draw


@dataclass(frozen=True)
class BaseConfig:
    """Settings every task has: the engine reads them."""

    seed: int = setting(0, "Seed", "PRNG seed of the initial parameters and the data order.", min=0, max=2**32 - 1)
    optimizer: str = setting("adam", "Optimizer", "Optax optimizer.", choices=("sgd", "adam"))
    lr: float = setting(1e-3, "Learning rate", "Step size of the optimizer, e.g. 0.001.", min=0, min_exclusive=True)
    log_every: int = setting(
        100,
        "Steps per chunk",
        "Steps run in one compiled chunk; metrics leave the device once per chunk.",
        min=1,
        max=100_000,
        advanced=True,
    )
    ckpt_every: int = setting(
        1000,
        "Checkpoint every (steps)",
        "Orbax checkpoint cadence; 0 = only when stopped, at epoch ends and at the end (also every 30 s).",
        min=0,
        advanced=True,
    )


@dataclass(frozen=True)
class StepsConfig(BaseConfig):
    """A full-batch task: every step sees the whole training set."""

    steps: int = setting(1000, "Steps", "Gradient steps.", min=1, max=100_000_000)


@dataclass(frozen=True)
class EpochsConfig(BaseConfig):
    """A mini-batch task: shuffled batches, whole epochs, evaluation on a test set."""

    batch_size: int = setting(32, "Batch size", "Examples per step.", min=1, max=1_000_000)
    epochs: int = setting(3, "Epochs", "Passes over the training set.", min=1, max=100_000)
    eval_every: int = setting(
        0, "Evaluate every (steps)", "Test-set evaluation cadence; 0 = once per epoch.", min=0, advanced=True
    )
    devices: int = setting(
        0,
        "Devices",
        "Local devices each batch is split over; 0 = all (the batch size must divide evenly).",
        min=0,
        advanced=True,
    )


class TaskDeclaration:
    """The part of a task class the page reads: its names, config, panels and spec (training's Task adds the
    model: data, init, step, evaluate, summaries, optimizer). The registry (settings.registry) takes any
    subclass as a task; `TaskSettings.of` reads one.

    Class attributes:
      name: short id (the CLI sub-command, the run's "task" field).
      title: words for the form.
      Config: the config dataclass.
      panels: live panels, a subset of PANELS in order.
      per_member_data: a population loads the data once per member. Not needed where `load_data` reads
        the setting the members vary from `self.cfg` (training/engine/data_reads.py sees that).
      last_value: step metrics logged as their chunk's last value instead of its mean.
    """

    name: ClassVar[str] = ""
    title: ClassVar[str] = ""
    Config: ClassVar[type] = StepsConfig
    panels: ClassVar[tuple[str, ...]] = ("loss",)
    per_member_data: ClassVar[bool] = False
    last_value: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def spec(cls) -> str:
        """ "module:Class", the way config.json and `--task` name this task."""
        return f"{cls.__module__}:{cls.__qualname__}"


@dataclass(frozen=True)
class TaskSettings:
    """What the page needs of a task, declared without its model code: names, typed config, panels.

    A settings module that imports no JAX (settings/regression.py) declares one and
    names the Task class by spec in `task`; the page reads it and never imports that class, the
    training process follows `task` to it (training.tasks.load_task). Its attributes are the Task
    class's own (`name`, `title`, `Config`, `panels`), so either answers a page's question.
    """

    name: str
    title: str
    Config: type  # the task's config dataclass, with its fields' metadata
    panels: tuple[str, ...]
    task: str  # "module:Class" (or "path/to/file.py:Class") of the Task subclass

    @classmethod
    def of(cls, task: type[TaskDeclaration]) -> TaskSettings:
        """The settings of an imported Task class."""
        return cls(task.name, task.title, task.Config, tuple(task.panels), task.spec())
