"""Runs grouped by a config field, as W&B's grouping: the groups and their labels, each group's curve (the mean
over its runs at each step, with a min-max or std band) and the runs table's row per group.

Plain data in (flattened configs, (x, y) series, a frame), plain data out: no JAX, no Streamlit, no run store.
Runs whose steps differ are aligned on the union of their steps: at a step a run did not log, its value is
interpolated between its neighbouring logged steps, and it counts only within its own first..last step (never
extrapolated), so a group's count may change along the x axis; a step logged twice by one run keeps its last value.
"""

from __future__ import annotations

import json
import math
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from components.compare_figures import Band
from components.series import Series

MISSING = "—"  # the value of a run without the field: its own group, last
MAX_POINTS = 1000  # a group's curve on more distinct steps than this is sampled on this many evenly spaced x
BANDS = {"min-max": "min-max band", "std": "±1 std band"}


@dataclass(frozen=True)
class Group:
    """The runs sharing one value of the field."""

    value: Any  # the value (MISSING for the runs without the field)
    text: str  # the value as shown
    run_ids: tuple[str, ...]

    def label(self, key: str) -> str:
        """What the group's line and row are called: the field, its value and the count ("lr=0.01 (3 runs)")."""
        n = len(self.run_ids)
        return f"{key}={self.text} ({n} run{'' if n == 1 else 's'})"


def _scalar(v: Any) -> bool:
    return v is None or isinstance(v, (bool, int, float, str))


def keys(configs: Iterable[Mapping[str, Any]]) -> list[str]:
    """The fields runs can be grouped by: each flattened config key with a plain value (number, text, bool) in at
    least one of `configs`, sorted case-insensitively."""
    found = {k for c in configs for k, v in c.items() if isinstance(k, str) and v is not None and _scalar(v)}
    return sorted(found, key=lambda k: (k.lower(), k))


def value_text(v: Any) -> str:
    """A value as a group shows it: numbers in their shortest form (0.01, 1e-05), text as it is."""
    if v is MISSING:
        return MISSING
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, float):
        return f"{v:g}" if math.isfinite(v) and v == v else str(v)
    return v if isinstance(v, str) else json.dumps(v, sort_keys=True, default=str)


def _identity(v: Any) -> tuple:
    """What makes two values one group (1 and 1.0 are one; True and 1 are not), and their order: numbers ascending,
    then booleans, text, anything else, and the runs without the field last."""
    if v is MISSING or v is None:
        return (4, "")
    if isinstance(v, bool):
        return (1, int(v))
    if isinstance(v, (int, float)):
        return (0, float(v)) if v == v else (0, math.inf)
    if isinstance(v, str):
        return (2, v)
    return (3, json.dumps(v, sort_keys=True, default=str))


def groups(configs: Mapping[str, Mapping[str, Any]], key: str) -> list[Group]:
    """The runs of `configs` ({run id: flattened config}) grouped by their value of `key`, in value order; runs keep
    their order inside a group."""
    found: dict[tuple, list[str]] = {}
    first: dict[tuple, Any] = {}
    for run_id, config in configs.items():
        v = config.get(key, MISSING)
        ident = _identity(v)
        found.setdefault(ident, []).append(run_id)
        first.setdefault(ident, MISSING if ident[0] == 4 else v)
    return [Group(first[i], value_text(first[i]), tuple(found[i])) for i in sorted(found)]


def _clean(x: Any, y: Any) -> tuple[np.ndarray, np.ndarray]:
    """A run's finite points sorted by x, the last value of an x logged twice."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    ok = np.isfinite(x) & np.isfinite(y)
    x, y = x[ok], y[ok]
    order = np.argsort(x, kind="stable")
    x, y = x[order], y[order]
    last = np.append(x[1:] != x[:-1], True) if x.size else np.zeros(0, bool)
    return x[last], y[last]


def aligned(curves: Sequence[Series], max_points: int = MAX_POINTS) -> tuple[np.ndarray, np.ndarray]:
    """(x, values): the union of the curves' steps (or `max_points` evenly spaced x over their range, when more),
    and a row per curve of its value at each x, NaN outside its own first..last step."""
    clean = [c for c in (_clean(x, y) for x, y in curves) if c[0].size]
    if not clean:
        return np.empty(0), np.empty((len(curves), 0))
    x = np.unique(np.concatenate([cx for cx, _ in clean]))
    if x.size > max_points:
        x = np.linspace(x[0], x[-1], max_points)
    rows = np.full((len(clean), x.size), np.nan)
    for i, (cx, cy) in enumerate(clean):
        inside = (x >= cx[0]) & (x <= cx[-1])
        rows[i, inside] = np.interp(x[inside], cx, cy)
    return x, rows


def aggregate(curves: Sequence[Series], band: str = "min-max", max_points: int = MAX_POINTS) -> Band:
    """A group's curve: the mean over its runs at each aligned step (`aligned`), and a band of their min and max
    ("min-max") or of the mean +- one standard deviation ("std", over the runs present at that step)."""
    if band not in BANDS:
        raise ValueError(f"band {band!r}: expected one of {', '.join(BANDS)}")
    x, rows = aligned(curves, max_points)
    if not x.size:
        return Band(x, x, x, x)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an x between two runs' ranges has none: NaN, a gap
        mean = np.nanmean(rows, axis=0)
        if band == "std":
            sd = np.nanstd(rows, axis=0)
            return Band(x, mean, mean - sd, mean + sd)
        return Band(x, mean, np.nanmin(rows, axis=0), np.nanmax(rows, axis=0))


COUNT = "runs"


def table(frame: pd.DataFrame, key: str, values: Mapping[str, Any], numeric: Sequence[str]) -> pd.DataFrame:
    """The runs table's row per group: the value of `key`, the count of runs and the mean of each `numeric`
    column over the group's runs (blank where none has it). `frame` holds a row per run with "run_id";
    `values`: each run id's value of `key` (a run without it falls in the MISSING group)."""
    configs = {rid: ({key: values[rid]} if rid in values else {}) for rid in frame["run_id"]}
    found = groups(configs, key)
    rows = []
    for g in found:
        part = frame[frame["run_id"].isin(g.run_ids)]
        means = {c: pd.to_numeric(part[c], errors="coerce").mean() for c in numeric if c in part}
        rows.append({key: g.text, COUNT: len(g.run_ids), **means})
    return pd.DataFrame(rows, columns=[key, COUNT, *[c for c in numeric if c in frame]])
