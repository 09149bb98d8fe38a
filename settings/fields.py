"""Typed settings with metadata: one dataclass per task drives the form, the CLI, `--help` and validation.

A task's config is a frozen dataclass whose fields are declared with `setting(...)`: a default plus a
label, help text, bounds and choices. `parse_config(cls, raw)` is the single place where user input
(strings from a CLI or a form, or typed values) becomes a config: it coerces each value to its
field's type, checks bounds and choices, then runs the class's own `validate()` for rules that
involve several fields, and raises one `ConfigError` naming every bad field by its label.
No JAX here: the page imports it.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any


class ConfigError(ValueError):
    """Invalid configuration; `errors` maps each bad field to a message that names it and says the fix."""

    def __init__(self, errors: Mapping[str, str]):
        self.errors = dict(errors)
        lines = [f"  --{k.replace('_', '-')}: {v}" for k, v in self.errors.items()]
        super().__init__("Invalid configuration:\n" + "\n".join(lines))


def setting(
    default: Any,
    label: str,
    help: str = "",  # noqa: A002 - the word users know from argparse
    *,
    min: float | None = None,  # noqa: A002
    max: float | None = None,  # noqa: A002
    min_exclusive: bool = False,
    choices: Sequence[Any] | None = None,
    advanced: bool = False,
) -> Any:
    """A dataclass field with the metadata every surface reads.

    Args:
      default: the default value (a tuple for list-valued fields).
      label: words for users, e.g. "Learning rate"; messages start with it.
      help: one sentence for the form's tooltip and `--help`.
      min, max: inclusive bounds (`min_exclusive`: the value must be > min).
      choices: the allowed values; the form shows a select box.
      advanced: shown folded away on the form.
    """
    meta = {
        "label": label,
        "help": help,
        "min": min,
        "max": max,
        "min_exclusive": min_exclusive,
        "choices": tuple(choices) if choices else None,
        "advanced": advanced,
    }
    return dataclasses.field(default=default, metadata=meta)


@dataclass(frozen=True)
class FieldInfo:
    """What a form or a parser needs to know about one config field."""

    name: str
    kind: str  # "int", "float", "str", "bool", "ints" (tuple of ints), or "floats"
    optional: bool  # None is allowed (empty input)
    default: Any
    label: str
    help: str
    min: float | None
    max: float | None
    min_exclusive: bool
    choices: tuple[Any, ...] | None
    advanced: bool


def _kind(hint: Any) -> tuple[str, bool]:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType) and type(None) in args:
        return _kind(next(a for a in args if a is not type(None)))[0], True
    if origin is tuple:
        return ("ints" if args[0] is int else "floats"), False
    return {int: "int", float: "float", bool: "bool"}.get(hint, "str"), False


def fields(cls: type) -> list[FieldInfo]:
    """The fields of config class `cls` in declaration order, with their metadata."""
    hints = typing.get_type_hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        kind, optional = _kind(hints[f.name])
        m = f.metadata
        out.append(
            FieldInfo(
                f.name,
                kind,
                optional,
                f.default,
                m.get("label", f.name.replace("_", " ").capitalize()),
                m.get("help", ""),
                m.get("min"),
                m.get("max"),
                bool(m.get("min_exclusive")),
                m.get("choices"),
                bool(m.get("advanced")),
            )
        )
    return out


def field_label(cls: type, name: str) -> str:
    """The label of field `name` of `cls` (the name itself when unknown)."""
    return next((f.label for f in fields(cls) if f.name == name), name)


def _number(kind: str, value: Any) -> float | int:
    if isinstance(value, bool):
        raise ValueError
    if isinstance(value, str):
        value = value.strip().replace("_", "")
    number = float(value)
    if kind == "int":
        if not number.is_integer():
            raise ValueError
        return int(number)
    return number


def coerce(info: FieldInfo, value: Any) -> Any:
    """A raw value (a string from a CLI or form, or already typed) as the field's type; ValueError if not."""
    if info.optional and (value is None or (isinstance(value, str) and value.strip().lower() in ("", "none", "all"))):
        return None
    if info.kind in ("ints", "floats"):
        parts = [p for p in value.replace(" ", ",").split(",") if p] if isinstance(value, str) else list(value)
        return tuple(_number(info.kind[:-1], p) for p in parts)
    if info.kind in ("int", "float"):
        return _number(info.kind, value)
    if info.kind == "bool":
        return value.strip().lower() in ("1", "true", "yes", "on") if isinstance(value, str) else bool(value)
    return str(value).strip()


def _type_words(kind: str) -> str:
    return {
        "int": "a whole number",
        "float": "a number",
        "ints": "whole numbers separated by commas",
        "floats": "numbers separated by commas",
        "bool": "true or false",
    }.get(kind, "text")


def check_bounds(info: FieldInfo, value: Any) -> str | None:
    """A message in the field's own words when `value` is out of its bounds or choices, else None."""
    if value is None:
        return None
    if info.choices is not None and value not in info.choices:
        return f"{info.label} must be one of {', '.join(map(str, info.choices))} (got {value!r})."
    values = value if isinstance(value, tuple) else (value,)
    for v in values:
        if isinstance(v, float) and not math.isfinite(v):
            return f"{info.label} must be a finite number (got {v})."
        if info.min is not None and (v <= info.min if info.min_exclusive else v < info.min):
            return f"{info.label} must be {'>' if info.min_exclusive else '>='} {info.min:g} (got {v:g})."
        if info.max is not None and v > info.max:
            return f"{info.label} must be <= {info.max:g} (got {v:g})."
    return None


def parse_config(cls: type, raw: Mapping[str, Any] | None = None, what: str = "task") -> Any:
    """Build and validate a `cls` config from raw values; unknown or bad fields raise one ConfigError.

    Args:
      cls: a config dataclass declared with `setting(...)` fields; an optional `validate(self)` method
        returns {field: message} for rules across fields.
      raw: field -> value; missing fields keep their defaults.
      what: the task's name, for the unknown-field message.
    """
    infos = {f.name: f for f in fields(cls)}
    errors: dict[str, str] = {}
    values: dict[str, Any] = {}
    for name, value in (raw or {}).items():
        info = infos.get(name)
        if info is None:
            errors[name] = f"is not a setting of {what}; known settings: {', '.join(infos)}."
            continue
        try:
            values[name] = coerce(info, value)
        except (TypeError, ValueError, AttributeError):
            errors[name] = f"{info.label} must be {_type_words(info.kind)} (got {value!r})."
            continue
        problem = check_bounds(info, values[name])
        if problem:
            errors[name] = problem
    if errors:
        raise ConfigError(errors)
    cfg = cls(**values)
    validate = getattr(cfg, "validate", None)
    errors.update(validate() if validate else {})
    if errors:
        raise ConfigError(errors)
    return cfg


def config_to_dict(cfg: Any) -> dict[str, Any]:
    """JSON-ready dict of a config's fields (tuples become lists)."""
    return {k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(cfg).items()}


def with_default(cls: type, name: str, default: Any) -> Any:
    """Field `name` of config class `cls` with a new default and the same label, help and bounds.

    For a task whose defaults differ from the base config's, e.g. `lr: float = with_default(BaseConfig, "lr", 0.005)`.
    """
    return dataclasses.field(default=default, metadata=cls.__dataclass_fields__[name].metadata)
