"""What the compare view computes from the selected runs: shared metrics, differing settings, bands.

No Streamlit here: pages wire these to widgets and `components.compare_figures`.
"""

from __future__ import annotations

import dataclasses
import json
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from components.compare_figures import Band
from components.series import Series
from dashboard.reading import provider

BAND_POINTS = 400


def labels(runs: Sequence[provider.RunInfo], names: Mapping[str, str] | None = None) -> dict[str, str]:
    """A unique label per run: its display name (or run name), with the id's tail where names repeat."""
    base = {r.run_id: (names or {}).get(r.run_id) or r.name for r in runs}
    counts = pd.Series(list(base.values())).value_counts()
    return {rid: n if counts[n] == 1 else f"{n} ({rid[-4:]})" for rid, n in base.items()}


def metric_sets(tags_by_run: Mapping[str, set[str]]) -> tuple[list[str], dict[str, list[str]]]:
    """(tags every run has, sorted; {tag some runs lack: those runs}) over {run label: its tags}."""
    if not tags_by_run:
        return [], {}
    union = set().union(*tags_by_run.values())
    shared = set.intersection(*map(set, tags_by_run.values()))
    missing = {t: [r for r, ts in tags_by_run.items() if t not in ts] for t in sorted(union - shared)}
    return sort_tags(shared), missing


def sort_tags(tags: set[str] | list[str]) -> list[str]:
    """train/*, test/*, the task's own, then perf/, epoch/ and sys/ last."""
    rank = {"train": 0, "test": 1, "perf": 3, "epoch": 4, "sys": 5}
    return sorted(tags, key=lambda t: (rank.get(t.split("/")[0], 2), t))


def _text(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:g}"
    return json.dumps(v) if isinstance(v, (list, dict)) else str(v)


def differs(runs: Sequence[provider.RunInfo], labels_: Mapping[str, str]) -> pd.DataFrame:
    """The settings whose values are not the same in every selected run: one row per setting, a column per run.

    Task and population are settings too; a setting one run lacks shows as "—".
    """
    settings: dict[str, dict[str, str]] = {}
    for r in runs:
        values = {"task": r.task, "population": r.status.get("group") or "—", **r.flat_config}
        for k, v in values.items():
            settings.setdefault(k, {})[labels_[r.run_id]] = _text(v)
    rows = {}
    for k, per_run in settings.items():
        full = [per_run.get(labels_[r.run_id], "—") for r in runs]
        if len(set(full)) > 1:
            rows[k] = full
    return pd.DataFrame.from_dict(rows, orient="index", columns=[labels_[r.run_id] for r in runs])


def parcoords_rows(runs: Sequence[provider.RunInfo], settings: Sequence[str]) -> tuple[list[dict], list[str]]:
    """One row per run with its `settings` and final metrics; returns (rows, final metric names)."""
    metrics = sort_tags(set().union(*[set(r.status.get("final") or {}) for r in runs]) if runs else set())
    rows = []
    for r in runs:
        final = r.status.get("final") or {}
        row = {s: r.task if s == "task" else r.flat_config.get(s) for s in settings}
        rows.append(row | {m: final.get(m) for m in metrics})
    return rows, metrics


def epoch_scale(status: Mapping[str, Any]) -> float | None:
    """Steps per epoch of a run from its status (None for a task without epochs)."""
    total, epochs = status.get("total_steps"), status.get("total_epochs")
    if isinstance(total, (int, float)) and isinstance(epochs, (int, float)) and total > 0 and epochs > 0:
        return float(total) / float(epochs)
    return None


def band(curves: Sequence[Series], kind: str = "min-max", points: int = BAND_POINTS) -> Band:
    """Mean and band of several curves on a common x grid (each interpolated within its own x range).

    kind: "min-max" (the band spans every member) or "std" (mean +- one standard deviation).
    """
    curves = [(np.asarray(x, float), np.asarray(y, float)) for x, y in curves if np.asarray(x).size]
    if not curves:
        empty = np.empty(0)
        return Band(empty, empty, empty, empty)
    lo = min(float(np.nanmin(x)) for x, _ in curves)
    hi = max(float(np.nanmax(x)) for x, _ in curves)
    grid = np.linspace(lo, hi, points) if hi > lo else np.array([lo])
    stack = np.full((len(curves), grid.size), np.nan)
    for i, (x, y) in enumerate(curves):
        order = np.argsort(x, kind="stable")
        x, y = x[order], y[order]
        inside = (grid >= x[0]) & (grid <= x[-1])
        ok = np.isfinite(y)
        if ok.any():
            stack[i, inside] = np.interp(grid[inside], x[ok], y[ok])
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an x where no member has a value: NaN, said once
        mean = np.nanmean(stack, axis=0)
        if kind == "std":
            sd = np.nanstd(stack, axis=0)
            return Band(grid, mean, mean - sd, mean + sd)
        return Band(grid, mean, np.nanmin(stack, axis=0), np.nanmax(stack, axis=0))


def timed_band(curves: Sequence[tuple[Any, Any, Any]], make: Callable[[list[Series]], Band]) -> Band:
    """`make`'s band of the (step, y) curves, with its runs' mean time (wall, seconds since each one's start) at
    each of its steps, for a time axis; NaN where no run has a time there."""
    band_ = make([(x, y) for x, y, _ in curves])
    times = make([(x, w) for x, _, w in curves])
    ok = np.isfinite(times.mean)
    wall = np.full(band_.x.size, np.nan)
    if ok.any() and band_.x.size:
        inside = (band_.x >= times.x[ok][0]) & (band_.x <= times.x[ok][-1])
        wall[inside] = np.interp(band_.x[inside], times.x[ok], times.mean[ok])
    return dataclasses.replace(band_, wall=wall)
