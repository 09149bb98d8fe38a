"""Typed, validated configs: one per task, built the same way by the CLI, the page and tests.

`parse_config(task, raw)` is the single place where user input becomes a config.
It collects *every* problem before raising, so a form or a CLI can show them all
at once, each naming the field and the fix.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

DATASET_SIZES: dict[str, tuple[int, int]] = {
    "mnist": (60_000, 10_000),
    "fashion_mnist": (60_000, 10_000),
}
OPTIMIZERS = ("sgd", "adam")
TASKS = ("regression", "mnist")


class ConfigError(ValueError):
    """Invalid configuration; `errors` maps each bad field to a message that says the fix."""

    def __init__(self, errors: Mapping[str, str]):
        self.errors = dict(errors)
        lines = [f"  --{k.replace('_', '-')}: {v}" for k, v in self.errors.items()]
        super().__init__("Invalid configuration:\n" + "\n".join(lines))


@dataclass(frozen=True)
class RegressionConfig:
    """Linear regression y = w*x + b fitted by gradient descent (the JAX seed's defaults)."""

    task: ClassVar[str] = "regression"
    points: int = 128
    noise: float = 0.5
    true_weight: float = 2.0
    true_bias: float = -1.0
    optimizer: str = "sgd"
    lr: float = 0.005
    steps: int = 1000
    seed: int = 42
    log_every: int = 10  # steps per jitted chunk; metrics leave the device once per chunk
    ckpt_every: int = 200  # steps between checkpoints (at chunk ends); 0 = only when stopped or finished

    def validate(self) -> dict[str, str]:
        """Return {field: message} for every invalid field (empty when valid)."""
        e: dict[str, str] = {}
        if self.points < 2:
            e["points"] = f"must be at least 2 (got {self.points})."
        elif self.points > 50_000_000:
            e["points"] = f"must be at most 50,000,000 (got {self.points}); use fewer points."
        if not math.isfinite(self.noise) or self.noise < 0:
            e["noise"] = f"must be a finite number >= 0 (got {self.noise})."
        for name in ("true_weight", "true_bias"):
            if not math.isfinite(getattr(self, name)):
                e[name] = f"must be a finite number (got {getattr(self, name)})."
        _check_common(self, e)
        return e

    @property
    def total_steps(self) -> int:
        return self.steps


@dataclass(frozen=True)
class MnistConfig:
    """Flax MLP classifier on MNIST or Fashion-MNIST (the Flax/Optax seed's defaults)."""

    task: ClassVar[str] = "mnist"
    dataset: str = "mnist"
    data_dir: str | None = None
    hidden: tuple[int, ...] = (128, 128)
    optimizer: str = "adam"
    lr: float = 1e-3
    batch_size: int = 32
    epochs: int = 3
    seed: int = 0
    log_every: int = 100  # steps per jitted chunk
    eval_every: int = 0  # steps between test-accuracy evaluations; 0 = once per epoch
    train_limit: int | None = None  # use only the first N training examples (quick runs, tests)
    test_limit: int | None = None  # use only the first N test examples
    ckpt_every: int = 1000  # steps between checkpoints (at chunk ends); 0 = only when stopped or finished
    devices: int = 0  # local devices each batch is split over; 0 = all (batch_size must divide evenly)

    def validate(self) -> dict[str, str]:
        """Return {field: message} for every invalid field (empty when valid)."""
        e: dict[str, str] = {}
        if self.dataset not in DATASET_SIZES:
            e["dataset"] = f"unknown dataset {self.dataset!r}; choose one of: {', '.join(DATASET_SIZES)}."
        if not self.hidden or any(h < 1 for h in self.hidden):
            e["hidden"] = f"must be one or more positive layer sizes, e.g. 128,128 (got {self.hidden})."
        if self.epochs < 1:
            e["epochs"] = f"must be at least 1 (got {self.epochs})."
        if self.eval_every < 0:
            e["eval_every"] = f"must be 0 (once per epoch) or a positive number of steps (got {self.eval_every})."
        for name in ("train_limit", "test_limit"):
            v = getattr(self, name)
            if v is not None and v < 1:
                e[name] = f"must be a positive number of examples or empty for all (got {v})."
        n_train = self.train_size
        if self.batch_size < 1:
            e["batch_size"] = f"must be at least 1 (got {self.batch_size})."
        elif n_train is not None and self.batch_size > n_train:
            e["batch_size"] = f"must not exceed the training set size {n_train} (got {self.batch_size}); lower it."
        elif self.devices > 0 and self.batch_size % self.devices:
            # With devices=0 the count is only known on the training host: training.sharding checks it there.
            e["batch_size"] = f"must be a multiple of --devices {self.devices} so every device gets an equal share (got {self.batch_size})."
        if self.devices < 0:
            e["devices"] = f"must be 0 (all local devices) or a positive device count (got {self.devices})."
        _check_common(self, e)
        return e

    @property
    def train_size(self) -> int | None:
        """Number of training examples used, or None for an unknown dataset."""
        if self.dataset not in DATASET_SIZES:
            return None
        full = DATASET_SIZES[self.dataset][0]
        return min(full, self.train_limit) if self.train_limit else full

    @property
    def steps_per_epoch(self) -> int:
        return max(1, (self.train_size or 0) // max(1, self.batch_size))

    @property
    def total_steps(self) -> int:
        return self.steps_per_epoch * self.epochs


Config = RegressionConfig | MnistConfig
CONFIG_CLASSES: dict[str, type] = {"regression": RegressionConfig, "mnist": MnistConfig}


def _check_common(cfg: Any, e: dict[str, str]) -> None:
    if cfg.optimizer not in OPTIMIZERS:
        e["optimizer"] = f"unknown optimizer {cfg.optimizer!r}; choose one of: {', '.join(OPTIMIZERS)}."
    if not math.isfinite(cfg.lr) or cfg.lr <= 0:
        e["lr"] = f"learning rate must be a number > 0, e.g. 0.001 (got {cfg.lr})."
    if hasattr(cfg, "steps") and cfg.steps < 1:
        e["steps"] = f"must be at least 1 (got {cfg.steps})."
    if cfg.log_every < 1:
        e["log_every"] = f"must be at least 1 step (got {cfg.log_every})."
    if cfg.ckpt_every < 0:
        e["ckpt_every"] = f"must be 0 (checkpoint only when stopped or finished) or a number of steps (got {cfg.ckpt_every})."
    if cfg.seed < 0 or cfg.seed >= 2**32:
        e["seed"] = f"must be an integer in [0, 2**32) (got {cfg.seed})."


def _coerce(name: str, hint: Any, value: Any) -> Any:
    """Convert a raw value (str from a CLI/form, or already typed) to the field's type."""
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin in (typing.Union, types.UnionType) and type(None) in args:
        if value is None or (isinstance(value, str) and value.strip().lower() in ("", "none", "all")):
            return None
        inner = next(a for a in args if a is not type(None))
        return _coerce(name, inner, value)
    if origin is tuple:
        if isinstance(value, str):
            parts = [p for p in value.replace(" ", ",").split(",") if p]
        else:
            parts = list(value)
        return tuple(_coerce(name, args[0], p) for p in parts)
    if hint is bool:
        if isinstance(value, str):
            return value.strip().lower() in ("1", "true", "yes", "on")
        return bool(value)
    if hint is int:
        if isinstance(value, bool):
            raise ValueError
        if isinstance(value, float):
            if not value.is_integer():
                raise ValueError
            return int(value)
        if isinstance(value, str):
            f = float(value.strip().replace("_", ""))
            if not f.is_integer():
                raise ValueError
            return int(f)
        return int(value)
    if hint is float:
        if isinstance(value, bool):
            raise ValueError
        return float(value.strip()) if isinstance(value, str) else float(value)
    if hint is str:
        return str(value).strip()
    return value


def parse_config(task: str, raw: Mapping[str, Any] | None = None) -> Config:
    """Build and validate the config for `task` from raw values (strings or typed).

    Args:
      task: "regression" or "mnist".
      raw: field -> value; missing fields keep their defaults, unknown fields are errors.

    Returns:
      The frozen config.

    Raises:
      ConfigError: listing every invalid field with its fix.
    """
    if task not in CONFIG_CLASSES:
        raise ConfigError({"task": f"unknown task {task!r}; choose one of: {', '.join(TASKS)}."})
    cls = CONFIG_CLASSES[task]
    hints = typing.get_type_hints(cls)
    fields = {f.name for f in dataclasses.fields(cls)}
    errors: dict[str, str] = {}
    values: dict[str, Any] = {}
    for name, value in (raw or {}).items():
        if name not in fields:
            errors[name] = f"is not a setting of the {task} task; known settings: {', '.join(sorted(fields))}."
            continue
        try:
            values[name] = _coerce(name, hints[name], value)
        except (TypeError, ValueError):
            kind = getattr(hints[name], "__name__", str(hints[name]))
            errors[name] = f"must be {'an integer' if kind == 'int' else 'a number' if kind == 'float' else kind} (got {value!r})."
    cfg = cls(**values)
    errors.update({k: v for k, v in cfg.validate().items() if k not in errors})
    if errors:
        raise ConfigError(errors)
    return cfg


def config_to_dict(cfg: Config) -> dict[str, Any]:
    """JSON-ready dict of a config, including its task name."""
    d = dataclasses.asdict(cfg)
    d["hidden"] = list(d["hidden"]) if "hidden" in d else None
    if d.get("hidden") is None:
        d.pop("hidden", None)
    return {"task": cfg.task, **d}


def config_from_dict(d: Mapping[str, Any]) -> Config:
    """Inverse of `config_to_dict` (validates again)."""
    d = dict(d)
    task = d.pop("task")
    return parse_config(task, d)

