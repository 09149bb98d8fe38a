"""`run.define_metric` and `run.summary`, as W&B keeps them.

`define_metric(name, step_metric=, step_sync=, hidden=, summary="min,max"|"none"|..., goal=)`: `name`
may be a glob ("val/*"); an exact name wins over a glob. Definitions are recorded in config.json
("define_metric": {name: {"step_metric", "step_sync", "hidden", "summary": [ops], "goal"}}) so the
page can draw `step_metric` as the x axis and leave hidden metrics out.

The summary: each logged metric's last value, or with summary ops W&B's {op: value} dict ("none":
no entry); values the script sets (`run.summary["best"] = ...`, strings included) win. It is written
to the run folder's summary.json, and its numbers to status.json "final" (one number a metric).
"""

from __future__ import annotations

import fnmatch
import logging
import math
from collections.abc import Callable, Iterator, Mapping
from typing import Any

logger = logging.getLogger("jaxdash")
OPS = ("min", "max", "mean", "last", "first", "none", "copy")


class MetricDefs:
    """The run's `define_metric` calls: name or glob -> its options."""

    def __init__(self) -> None:
        self.defs: dict[str, dict[str, Any]] = {}
        self._resolved: dict[str, dict[str, Any] | None] = {}  # key -> its definition (cached per key)

    def define(self, name: str, step_metric: Any = None, step_sync: bool | None = None, hidden: bool | None = None,
               summary: str | None = None, goal: str | None = None, overwrite: bool | None = None,
               ) -> dict[str, Any]:  # fmt: skip
        """Record one definition (merged with an earlier one of the same name unless `overwrite`)."""
        if not isinstance(name, str) or not name:
            raise ValueError("jaxdash.define_metric() needs a non-empty metric name")
        step_metric = getattr(step_metric, "name", step_metric)  # a Metric returned by an earlier call
        new: dict[str, Any] = {}
        if step_metric is not None:
            new["step_metric"] = str(step_metric)
            new["step_sync"] = True if step_sync is None else bool(step_sync)
        elif step_sync is not None:
            new["step_sync"] = bool(step_sync)
        if hidden is not None:
            new["hidden"] = bool(hidden)
        if goal is not None:
            new["goal"] = "minimize" if str(goal).lower().startswith("min") else "maximize"
        if summary is not None:
            new["summary"] = _ops(name, summary, new.get("goal") or self.defs.get(name, {}).get("goal"))
        self.defs[name] = new if overwrite else {**self.defs.get(name, {}), **new}
        self._resolved.clear()
        return self.defs[name]

    def find(self, key: str) -> dict[str, Any] | None:
        """The definition `key` falls under: its own name, else the last glob defined that matches it."""
        if key not in self._resolved:
            found = self.defs.get(key)
            if found is None:
                globs = [d for n, d in self.defs.items() if "*" in n and fnmatch.fnmatchcase(key, n)]
                found = globs[-1] if globs else None
            self._resolved[key] = found
        return self._resolved[key]

    def step_metrics(self) -> set[str]:
        """Metrics other metrics are plotted against (their last value joins rows that lack it)."""
        return {d["step_metric"] for d in self.defs.values() if d.get("step_sync") and d.get("step_metric")}


def _ops(name: str, summary: str, goal: str | None) -> list[str]:
    ops = []
    for op in (s.strip().lower() for s in str(summary).split(",")):
        if op == "best":  # older W&B: the best value by `goal`
            op = "max" if goal == "maximize" else "min"
        if op not in OPS:
            logger.warning("jaxdash: define_metric(%r): summary %r is not one of %s; ignored", name, op, ", ".join(OPS))
            continue
        ops.append(op)
    return ops


def summary_of(stats: Mapping[str, list[float]], defs: MetricDefs) -> dict[str, Any]:
    """W&B's automatic summary from each metric's [last, min, max, sum, count, first, kind] statistics (a key
    logged as a nested dict stays "a.b", as the rows and W&B's summary records name it); kind "i": logged as
    integers, "b": as bools (W&B's summary keeps ints and true/false)."""
    out: dict[str, Any] = {}
    for name, (last, low, high, total, count, first, whole) in stats.items():
        if whole:
            last, low, high, first = (
                int(v) if math.isfinite(v) and v == int(v) else v for v in (last, low, high, first)
            )
        if whole == "b":
            last, first = (bool(v) if isinstance(v, int) else v for v in (last, first))
        ops = (defs.find(name) or {}).get("summary")
        if not ops or ops == ["copy"]:
            out[name] = last
        elif "none" not in ops:
            picks = {
                "last": last,
                "first": first,
                "min": low,
                "max": high,
                "mean": total / count if count else math.nan,
            }
            out[name] = {op: picks[op] for op in ops if op in picks and not (count == 0 and op != "last")}
    return out


def final_numbers(summary: Mapping[str, Any], prefix: str = "") -> dict[str, float]:
    """One number a metric for status.json "final": a number itself, else its first op's ({"min": ..});
    a nested summary's keys as "a.b"."""
    out = {}
    for key, value in summary.items():
        if isinstance(value, dict) and value and not value.keys() <= set(OPS):
            out.update(final_numbers(value, f"{prefix}{key}."))
            continue
        if isinstance(value, dict):
            value = next((v for v in value.values() if isinstance(v, (int, float))), None)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            out[f"{prefix}{key}"] = float(value)
    return out


def final_basis(summary: Mapping[str, Any], set_keys: set[str], prefix: str = "") -> dict[str, str]:
    """What each of `final_numbers` is where it is not the metric's last logged value (a tile shows that one):
    the first summary op of a defined metric ("min"), "run.summary" for a value the script set itself."""
    out = {}
    for key, value in summary.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and value and not value.keys() <= set(OPS):
            out.update(final_basis(value, set(), f"{name}."))
        elif isinstance(value, dict):
            op = next((op for op, v in value.items() if isinstance(v, (int, float))), None)
            if op is not None and op != "last":
                out[name] = op
        elif key in set_keys and not prefix and isinstance(value, (int, float)) and not isinstance(value, bool):
            out[name] = "run.summary"
    return out


class Summary:
    """`run.summary`: item and attribute access, `update`; the script's values win over the logged ones."""

    def __init__(self, logged: Callable[[], dict[str, Any]], on_change: Callable[[], None]) -> None:
        object.__setattr__(self, "_set", {})
        object.__setattr__(self, "_logged", logged)
        object.__setattr__(self, "_on_change", on_change)

    def _all(self) -> dict[str, Any]:
        return {**self._logged(), **self._set}

    def __getitem__(self, key: str) -> Any:
        return self._set[key] if key in self._set else self._logged()[key]

    def __getattr__(self, key: str) -> Any:
        if key.startswith("_"):
            raise AttributeError(key)
        try:
            return self[key]
        except KeyError:
            raise AttributeError(f"summary has no key {key!r}") from None

    def __setitem__(self, key: str, value: Any) -> None:
        from jaxdash.wandb_config import json_friendly

        self._set[str(key)] = json_friendly(value)
        self._on_change()

    __setattr__ = __setitem__

    def __delitem__(self, key: str) -> None:
        self._set.pop(key, None)
        self._on_change()

    def __contains__(self, key: object) -> bool:
        return key in self._all()

    def __iter__(self) -> Iterator[str]:
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._all())

    def __repr__(self) -> str:
        return repr(self._all())

    def update(self, d: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        """Set several keys at once."""
        from jaxdash.wandb_config import json_friendly

        self._set.update({str(k): json_friendly(v) for k, v in {**(d or {}), **kwargs}.items()})
        self._on_change()

    def get(self, key: str, default: Any = None) -> Any:
        """`dict.get`."""
        return self._all().get(key, default)

    def keys(self) -> list[str]:
        """Every key: logged metrics and the script's own."""
        return list(self._all())

    def items(self) -> list[tuple[str, Any]]:
        """(key, value) pairs."""
        return list(self._all().items())

    def values(self) -> list[Any]:
        """The values."""
        return list(self._all().values())

    def as_dict(self) -> dict[str, Any]:
        """A plain dict copy."""
        return self._all()
