"""The Task interface: what a training task declares; the engine (training.engine.loop) does the rest.

A task is a class with a typed config and four pure pieces, after the JAX "stateful computations"
pattern (state in, new state out):

    class MyTask(Task):
        name, title = "sine", "Noisy sine (MLP)"
        Config = MyConfig                      # a frozen dataclass of `setting(...)` fields
        panels = ("fit", "loss")               # what the live page draws

        def load_data(self) -> Data            # host or device arrays, once per run
        def init(self, key) -> state           # params + optimizer state (lr held in it)
        def step(self, state, batch) -> (state, metrics)   # pure; jitted, scanned, vmapped
        def evaluate(self, state, test) -> metrics          # optional, pure
        def summarize(self, state, data, final) -> [FitSummary | ClassificationSummary]  # optional, host

The engine runs `step` in `lax.scan` chunks of `cfg.log_every` steps, over a member axis (a single
run is one member; a population vmaps K members whose learning rate and seed differ), with
batches either the whole training set (configs with `steps`) or shuffled mini-batches of
`batch_size` (configs with `epochs`). Metrics named "loss" are checked for divergence.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from training.settings import setting

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


@dataclass
class Data:
    """A task's data. `train` and `test` map names to arrays whose first axis is the example axis.

    `host` holds whatever `summarize` needs on the host (e.g. the raw test images).
    """

    train: Mapping[str, Any]
    test: Mapping[str, Any] | None = None
    host: Mapping[str, Any] = dataclasses.field(default_factory=dict)


class Task:
    """Base class of every task; see the module docstring.

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

    def __init__(self, cfg: Any):
        self.cfg = cfg

    def load_data(self) -> Data:
        """The data, loaded once per run (once per member where the members' data differ)."""
        raise NotImplementedError

    def init(self, key: Any) -> Any:
        """Initial state (a pytree: params, optimizer state, ...) drawn from PRNG key `key`."""
        raise NotImplementedError

    def step(self, state: Any, batch: Mapping[str, Any]) -> tuple[Any, dict[str, Any]]:
        """One pure optimizer step: (state, batch) -> (new state, scalar metrics)."""
        raise NotImplementedError

    def evaluate(self, state: Any, test: Mapping[str, Any]) -> dict[str, Any]:
        """Pure test-set metrics of `state`; only called when `has_evaluate`."""
        raise NotImplementedError

    @classmethod
    def has_evaluate(cls) -> bool:
        """True when the task overrides `evaluate`."""
        return cls.evaluate is not Task.evaluate

    def summarize(self, state: Any, data: Data, final: bool) -> list[Any]:
        """Host-side summaries of one member (see training.tasks.summaries); called ~10 times a run and at the end."""
        return []

    def optimizer(self) -> Any:
        """The Optax optimizer named by cfg.optimizer, its learning rate held in the optimizer *state*.

        `optax.inject_hyperparams` keeps lr out of the compiled program, so K members with K learning
        rates share one program (a population) and a checkpoint carries its own lr.
        """
        import optax

        from training.tasks.optimizers import adam  # optax.adam's state, one divide per parameter (#39)

        make = {"adam": adam, "sgd": optax.sgd}[self.cfg.optimizer]
        return optax.inject_hyperparams(make)(learning_rate=self.cfg.lr)

    @classmethod
    def spec(cls) -> str:
        """ "module:Class", the way config.json and `--task` name this task."""
        return f"{cls.__module__}:{cls.__qualname__}"


@dataclass(frozen=True)
class TaskSettings:
    """What the page needs of a task, declared without its model code: names, typed config, panels.

    A settings module that imports no JAX (training/tasks/regression_settings.py) declares one and
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
    def of(cls, task: type[Task]) -> TaskSettings:
        """The settings of an imported Task class."""
        return cls(task.name, task.title, task.Config, tuple(task.panels), task.spec())
