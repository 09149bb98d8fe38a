"""`run.config` / `wandb.config`: W&B's config object, persisted to config.json, TensorBoard and the W&B copy.

As `wandb.sdk.wandb_config.Config`: item and attribute access, `update` from a dict, an argparse
`Namespace`, absl `FLAGS` or a YAML file path, `setdefaults`, `allow_val_change`, `keys/items/get/
as_dict`; a key's leading dashes are stripped; values W&B cannot store as JSON become what W&B
stores (numbers from NumPy/JAX scalars, lists from small arrays and tuples, `str()` of other
objects). Changing a set value without `allow_val_change=True` raises `ConfigError`, as W&B does.
Every change calls the run's callback, which writes config.json and hands the config to the writers.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import inspect
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from jaxdash.notices import notice

MAX_DEPTH = 32  # levels of nested dicts and lists a config value keeps (Python's own limit is ~1,000 calls)
CUT = "..."  # what stands for a value nested deeper


class ConfigError(ValueError):
    """A config value changed without `allow_val_change=True` (W&B's `wandb.sdk.lib.config_util.ConfigError`)."""


def json_friendly(val: Any, depth: int = 0) -> Any:
    """`val` as W&B stores a config value (`wandb.util.json_friendly_val`): plain JSON types, else `str(val)`.

    Dicts and lists nested deeper than MAX_DEPTH are cut there (CUT in their place, one warning), so a
    config of any depth is accepted and every later reader (config.json, TensorBoard, W&B) can read it.
    """
    if depth >= MAX_DEPTH and isinstance(val, (Mapping, list, tuple, set, frozenset)):
        notice("depth", f"a config or summary value nested deeper than {MAX_DEPTH} levels: kept to that depth, "
               f"the deeper values stored as {CUT!r}")  # fmt: skip
        return CUT
    if isinstance(val, Mapping):
        return {str(k): json_friendly(v, depth + 1) for k, v in val.items()}
    if isinstance(val, slice):
        return {"slice_start": val.start, "slice_step": val.step, "slice_stop": val.stop}
    if dataclasses.is_dataclass(val) and not isinstance(val, type):
        return json_friendly(dataclasses.asdict(val))
    if hasattr(val, "dtype") and hasattr(val, "shape") and not isinstance(val, np.generic):  # NumPy / JAX arrays
        arr = np.asarray(val)
        val = arr.reshape(-1)[0].item() if arr.size == 1 else arr.tolist() if arr.size <= 32 else str(val)
    elif isinstance(val, np.generic):
        val = val.item()
    elif isinstance(val, bytes):
        val = val.decode("utf-8", "replace")
    elif isinstance(val, (datetime.datetime, datetime.date)):
        val = val.isoformat()
    elif isinstance(val, enum.Enum):
        val = val.name
    elif isinstance(val, (set, frozenset)):
        val = list(val)
    elif callable(val) and not isinstance(val, type):
        val = f"{getattr(val, '__module__', '')}.{getattr(val, '__qualname__', val)}"
    if isinstance(val, float) and math.isnan(val):
        return None
    if isinstance(val, (list, tuple)):
        return [json_friendly(v, depth + 1) for v in val]
    if val is None or isinstance(val, (bool, int, float, str)):
        return val
    return str(val)


def parse_config(params: Any, include: Sequence[str] | None = None, exclude: Sequence[str] | None = None) -> dict:
    """A dict from a dict, a YAML file path, an argparse Namespace, absl FLAGS or any object with `__dict__`
    (`wandb.helper.parse_config`); `include` / `exclude` keep or drop keys."""
    if include and exclude:
        raise ValueError("jaxdash.config: give at most one of config_include_keys and config_exclude_keys")
    if params is None:
        params = {}
    elif isinstance(params, (str, Path)):
        params = _from_yaml(Path(params))
    elif isinstance(params, Config):
        params = params.as_dict()
    elif not isinstance(params, Mapping):
        params = _from_object(params)
    params = dict(params)
    if include:
        params = {k: v for k, v in params.items() if k in include}
    if exclude:
        params = {k: v for k, v in params.items() if k not in exclude}
    return params


def _from_object(params: Any) -> dict:
    module = inspect.getmodule(params)
    if module is not None and module.__name__ == "absl.flags":
        params = params.FLAGS
        module = inspect.getmodule(params)
    if module is not None and module.__name__ == "absl.flags._flagvalues":
        return {name: params[name].value for name in dir(params)}
    if not hasattr(params, "__dict__"):
        raise TypeError(f"jaxdash.config: a config must be a dict or have a __dict__, got {type(params).__name__}")
    return dict(vars(params))


def _from_yaml(path: Path) -> dict:
    """A W&B config file: {key: value} or W&B's {key: {"value": v, "desc": ...}} form."""
    import yaml

    try:
        doc = yaml.safe_load(path.read_text()) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise ValueError(f"jaxdash.config: cannot read the config file {path}: {exc}") from None
    if not isinstance(doc, dict):
        raise ValueError(f"jaxdash.config: {path} must hold a mapping of settings")
    doc.pop("wandb_version", None)
    return {k: v["value"] if isinstance(v, dict) and "value" in v else v for k, v in doc.items()}


class Config:
    """The run's hyperparameters, as `wandb.config`: `config.lr`, `config["lr"]`, `config.update(args)`."""

    def __init__(self, items: Mapping[str, Any] | None = None, on_change: Callable[[dict], None] | None = None):
        object.__setattr__(self, "_items", {})
        object.__setattr__(self, "_on_change", None)
        if items:
            self.update(items, allow_val_change=True)
        object.__setattr__(self, "_on_change", on_change)

    def _set_callback(self, on_change: Callable[[dict], None] | None) -> None:
        object.__setattr__(self, "_on_change", on_change)

    def _sanitize(self, key: Any, val: Any, allow_val_change: bool | None) -> tuple[str, Any]:
        key = str(key).strip("-")
        val = json_friendly(val)
        if not allow_val_change and key in self._items and val != self._items[key]:
            raise ConfigError(
                f'Attempted to change value of key "{key}" from {self._items[key]} to {val}\n'
                "If you really want to do this, pass allow_val_change=True to config.update()"
            )
        return key, val

    def _changed(self, data: dict) -> None:
        if data and self._on_change is not None:
            self._on_change(data)

    def __setitem__(self, key: str, val: Any) -> None:
        key, val = self._sanitize(key, val, None)
        self._items[key] = val
        self._changed({key: val})

    __setattr__ = __setitem__

    def __getitem__(self, key: str) -> Any:
        return self._items[key]

    def __getattr__(self, key: str) -> Any:
        items = self.__dict__.get("_items")  # unset while unpickling or copying: no recursion
        if items is None or key not in items:
            raise AttributeError(f"{type(self)!r} object has no attribute {key!r}")
        return items[key]

    def __delitem__(self, key: str) -> None:
        del self._items[key]
        self._changed({})

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __repr__(self) -> str:
        return str(dict(self._items))

    def __eq__(self, other: object) -> bool:
        return dict(self._items) == (other.as_dict() if isinstance(other, Config) else other)

    def update(self, d: Any, allow_val_change: bool | None = None) -> None:
        """Merge a dict, Namespace, absl FLAGS or YAML path; a changed value needs `allow_val_change=True`."""
        clean = dict(self._sanitize(k, v, allow_val_change) for k, v in parse_config(d).items())
        self._items.update(clean)
        self._changed(clean)

    def setdefaults(self, d: Any) -> None:
        """Set the keys of `d` that are not set yet."""
        fresh = {k: v for k, v in parse_config(d).items() if str(k).strip("-") not in self._items}
        self.update(fresh)

    def get(self, *args: Any) -> Any:
        """`dict.get`."""
        return self._items.get(*args)

    def keys(self) -> list[str]:
        """The keys, less W&B's private `_`-prefixed ones."""
        return [k for k in self._items if not k.startswith("_")]

    def items(self) -> list[tuple[str, Any]]:
        """(key, value) pairs, less `_`-prefixed keys."""
        return [(k, v) for k, v in self._items.items() if not k.startswith("_")]

    def values(self) -> list[Any]:
        """The values, less those of `_`-prefixed keys."""
        return [v for _, v in self.items()]

    def as_dict(self) -> dict[str, Any]:
        """A plain dict copy."""
        return dict(self._items)

    def persist(self) -> None:
        """Write the whole config again (W&B's `Config.persist`)."""
        self._changed(self.as_dict())
