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
from typing import Any

from settings.task import TaskDeclaration


@dataclass
class Data:
    """A task's data. `train` and `test` map names to arrays whose first axis is the example axis.

    `host` holds whatever `summarize` needs on the host (e.g. the raw test images).
    """

    train: Mapping[str, Any]
    test: Mapping[str, Any] | None = None
    host: Mapping[str, Any] = dataclasses.field(default_factory=dict)


class Task(TaskDeclaration):
    """Base class of every task; see the module docstring. Its names, config and panels are
    TaskDeclaration's (settings/task.py), the part the page reads without importing the model."""

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
