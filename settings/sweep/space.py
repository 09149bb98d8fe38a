"""Sweep spaces: `--sweep FIELD=SPEC` parsed and checked against a task's config before anything starts.

    lr=0.001,0.01,0.1          listed values (grid)
    lr=log:1e-4:1e-1:4         4 log-spaced values      steps=100:400:4   4 evenly spaced values
    lr=loguniform(1e-4,1e-1)   a distribution (random / tpe)
    lr=uniform(0,1)  steps=int(100,400)  optimizer=choice(sgd,adam)
    hidden=64;128;64,64        a list-valued setting: its values are separated by ";"

Every problem is a ConfigError naming the field, in one line. No JAX here: the page uses it too.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import optuna

from settings.fields import ConfigError, FieldInfo, _type_words, check_bounds, coerce, fields

MAX_GRID = 1000  # grid points a sweep may make; a typo like 1:1e6:1e6 is refused, not started
_DIST = re.compile(r"^(uniform|loguniform|int|choice)\((.*)\)$")


@dataclass(frozen=True)
class Param:
    """One swept field: listed `values` (a grid axis) or an Optuna `distribution`."""

    name: str
    values: tuple[Any, ...] | None = None
    distribution: optuna.distributions.BaseDistribution | None = None

    def as_distribution(self) -> optuna.distributions.BaseDistribution:
        """The distribution Optuna samples from (listed values become a categorical)."""
        return self.distribution or optuna.distributions.CategoricalDistribution(self.values)


def _fail(name: str, why: str) -> ConfigError:
    return ConfigError({"sweep": f"{name}: {why}"})


def _numbers(name: str, parts: Sequence[str]) -> list[float]:
    try:
        return [float(p) for p in parts]
    except ValueError:
        raise _fail(name, f"expects numbers, got {','.join(parts)!r}") from None


def _range(name: str, text: str, info: FieldInfo) -> tuple[Any, ...]:
    """`lo:hi:count` or `log:lo:hi:count` -> the listed values."""
    parts = text.split(":")
    log = parts[0] == "log"
    parts = parts[1:] if log else parts
    if len(parts) != 3:
        raise _fail(name, f"a range is lo:hi:count or log:lo:hi:count (got {text!r})")
    lo, hi, count = _numbers(name, parts)
    if count != int(count) or count < 1 or hi < lo:
        raise _fail(name, f"the range {text!r} is empty; give lo <= hi and a count >= 1")
    if count > MAX_GRID:
        raise _fail(name, f"{int(count):,} values is too many (at most {MAX_GRID}); use fewer or random/tpe")
    if log and (lo <= 0 or hi <= 0):
        raise _fail(name, f"a log range must stay above 0 (got {lo:g}..{hi:g}); use a linear range")
    grid = np.geomspace(lo, hi, int(count)) if log else np.linspace(lo, hi, int(count))
    if info.kind == "int":
        return tuple(dict.fromkeys(int(round(v)) for v in grid))
    return tuple(float(f"{v:.6g}") for v in grid)


def _distribution(name: str, kind: str, args: str, info: FieldInfo) -> optuna.distributions.BaseDistribution:
    parts = [a.strip() for a in args.split(",") if a.strip()]
    if kind == "choice":
        if not parts:
            raise _fail(name, "choice() needs at least one value")
        return optuna.distributions.CategoricalDistribution(tuple(_check(name, info, p) for p in parts))
    if len(parts) != 2:
        raise _fail(name, f"{kind}(lo,hi) takes two numbers (got {args!r})")
    lo, hi = _numbers(name, parts)
    if hi < lo:
        raise _fail(name, f"{kind}({args}) is empty; give lo <= hi")
    for v in (lo, hi):
        _check(name, info, int(v) if kind == "int" else v)
    if kind == "int":
        return optuna.distributions.IntDistribution(int(lo), int(hi))
    if kind == "loguniform" and lo <= 0:
        raise _fail(name, f"loguniform must stay above 0 (got {lo:g}); use uniform")
    return optuna.distributions.FloatDistribution(lo, hi, log=kind == "loguniform")


def _check(name: str, info: FieldInfo, value: Any) -> Any:
    """The value as the field's type, or a ConfigError naming the field and its bounds."""
    try:
        v = coerce(info, value)
    except (ValueError, TypeError):
        raise _fail(name, f"{value!r} is not {_type_words(info.kind)}") from None
    problem = check_bounds(info, v)
    if problem:
        raise _fail(name, problem)
    if info.choices and v not in info.choices:
        raise _fail(name, f"{v!r} is not one of {', '.join(map(str, info.choices))}")
    return v


def parse_param(spec: str, infos: dict[str, FieldInfo]) -> Param:
    """One `FIELD=SPEC` -> a Param, checked against the task's fields."""
    name, sep, text = spec.partition("=")
    name, text = name.strip().replace("-", "_"), text.strip()
    if not sep or not name:
        raise ConfigError({"sweep": f"expects FIELD=V1,V2 or FIELD=lo:hi:count (got {spec!r})"})
    if name not in infos:
        known = ", ".join(sorted(infos))
        raise _fail(name, f"is not a setting of this task (settings: {known})")
    info = infos[name]
    if not text:
        raise _fail(name, "no values given; e.g. lr=0.001,0.01")
    match = _DIST.match(text)
    if match:
        return Param(name, distribution=_distribution(name, match[1], match[2], info))
    if info.kind in ("ints", "floats"):  # a value is itself a list (hidden=64,64): values split on ";"
        listed = [_check(name, info, v.strip()) for v in text.split(";") if v.strip()]
        values = tuple(dict.fromkeys(",".join(map(str, v)) for v in listed))
        if not values:
            raise _fail(name, "no values given; e.g. hidden=64;128,128")
        return Param(name, values=values)
    if ":" in text and info.kind in ("int", "float"):
        values = _range(name, text, info)
    else:
        values = tuple(dict.fromkeys(_check(name, info, v.strip()) for v in text.split(",") if v.strip()))
    if not values:
        raise _fail(name, "no values given; e.g. lr=0.001,0.01")
    return Param(name, values=tuple(_check(name, info, v) for v in values))


def parse_space(specs: Sequence[str], config_cls: type, method: str = "grid") -> dict[str, Param]:
    """All `--sweep` specs of one sweep; a grid must list every axis and stay under MAX_GRID points."""
    infos = {f.name: f for f in fields(config_cls)}
    space: dict[str, Param] = {}
    for spec in specs:
        p = parse_param(spec, infos)
        if p.name in space:
            raise _fail(p.name, "is given twice; list all its values in one --sweep")
        space[p.name] = p
    if not space:
        raise ConfigError({"sweep": "no --sweep FIELD=... given"})
    if method == "grid":
        for p in space.values():
            if p.values is None:
                raise _fail(p.name, "a distribution needs --sweep-method random or tpe (grid takes listed values)")
        size = grid_size(space)
        if size > MAX_GRID:
            names = " x ".join(f"{p.name}({len(p.values or ())})" for p in space.values())
            raise ConfigError({"sweep": f"{names} makes {size:,} grid points (at most {MAX_GRID}); list fewer"})
    return space


def grid_size(space: dict[str, Param]) -> int:
    """Grid points of a space of listed values."""
    return math.prod(len(p.values or ()) for p in space.values())


def to_specs(space: dict[str, Param]) -> dict[str, Any]:
    """The space as JSON (stored on the study so any worker can rebuild it)."""
    return {n: optuna.distributions.distribution_to_json(p.as_distribution()) for n, p in space.items()}


def from_specs(stored: dict[str, Any]) -> dict[str, optuna.distributions.BaseDistribution]:
    """Distributions back from `to_specs`."""
    return {n: optuna.distributions.json_to_distribution(s) for n, s in stored.items()}
