"""The runs table as data: one row per run with its notes and final metrics, filters and free-text search.

"group" is a population (runs trained together, status.json "group"); "wandb group" is a W&B script's
`group=` (config.json "wandb_group"): runs shown together, each with its own state and config. No Streamlit
here (the page draws it); a run's notes, W&B fields and alert count are small files, re-read when changed.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import pandas as pd

from dashboard.panels.compare_data import sort_tags
from dashboard.reading import provider
from runstore import run_states

ACTIVE = ("queued", "starting", "running")
PROBLEMS = run_states.PROBLEMS
BASE_COLUMNS = ["name", "tags", "group", "wandb group", "job type", "task", "status", "alerts", "config"]
TAIL_COLUMNS = ["duration", "started", "message", "run_id", "search"]
HPARAM_PREFIX = "config."  # a hyperparameter's column, as W&B's runs table names them ("config.lr")
MAX_HPARAMS = 40  # columns at most (in first-seen order): a config of hundreds of keys stays in "config"


def hparams(config: dict[str, Any]) -> dict[str, Any]:
    """A run's hyperparameters as their own columns: its flattened config's (`RunInfo.flat_config`) numbers, strings
    and booleans (a logdir's add_hparams and a client's config land in config.json alike); lists stay in "config"."""
    return {
        f"{HPARAM_PREFIX}{k}": v
        for k, v in config.items()
        if isinstance(v, (int, float, str, bool)) and not isinstance(k, bool)
    }


@dataclass
class Filters:
    """What the user narrowed the table to (empty = everything)."""

    states: list[str] = field(default_factory=list)
    tasks: list[str] = field(default_factory=list)
    groups: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    wandb_groups: list[str] = field(default_factory=list)
    job_types: list[str] = field(default_factory=list)
    text: str = ""


def _duration(s: dict[str, Any], created: float) -> float | None:
    started = s.get("started") or created
    if s.get("ended") and s.get("wall_seconds"):
        return s.get("wall_seconds")
    end = s.get("ended") or (time.time() if s.get("state") in ACTIVE else None)
    return end - started if end and started else None


def _state(s: dict[str, Any]) -> str:
    """The run's state as the table shows it: "stalled" for an active run making no progress (runstore.processes)."""
    state = s.get("state", "?")
    if state in ACTIVE and provider.with_stall(s, time.time()).get("stalled_since"):
        return "stalled"
    return state


def frame(
    runs: Sequence[provider.RunInfo], key_config: Callable[[str, dict], str], short_group: Callable[[Any], Any]
) -> pd.DataFrame:
    """One row per run: display name, tags, group, task, state, settings, every final metric, times.

    "search" holds the lower-cased text the free-text filter looks in (name, id, settings, tags, notes).
    """
    rows, finals, hp_names = [], set(), {}
    for r in runs:
        s, final = r.status, r.status.get("final") or {}
        finals |= set(final)
        notes = provider.notes(r.path)
        meta = provider.wandb_meta(r.path)
        flat = r.flat_config  # nested settings as dotted keys ("model.hidden"), as W&B's and TensorBoard's tables
        config = key_config(r.task, flat)
        started = s.get("started") or r.created
        text = [notes.display_name, r.name, r.run_id, r.task, config, json.dumps(r.config), notes.notes, *notes.tags]
        text += [meta.group, meta.job_type]
        hp = hparams(flat)
        for name in hp:
            if len(hp_names) < MAX_HPARAMS:
                hp_names.setdefault(name, None)
        rows.append(
            {
                "name": notes.display_name or r.name,
                "tags": notes.tags,
                "group": short_group(s.get("group")),
                "wandb group": meta.group or None,
                "job type": meta.job_type or None,
                "task": r.task,
                "status": _state(s),
                "alerts": provider.alert_count(r.path) or None,
                "config": config,
                **{f"final {m}": v for m, v in final.items() if isinstance(v, (int, float))},
                "duration": _duration(s, r.created),
                "started": datetime.fromtimestamp(started) if started else None,
                "message": s.get("message") if s.get("state") in PROBLEMS else None,
                "run_id": r.run_id,
                "search": " ".join(text).lower(),
                "_group": s.get("group"),
                **{k: v for k, v in hp.items() if k in hp_names},
            }
        )
    metrics = [f"final {m}" for m in sort_tags(finals)]
    columns = [*BASE_COLUMNS, *hp_names, *metrics, *TAIL_COLUMNS, "_group"]
    frame = pd.DataFrame(rows, columns=columns)
    for name in hp_names:  # one type a column: a column of mixed numbers and strings shows as text
        if frame[name].map(lambda v: isinstance(v, str)).any():
            frame[name] = frame[name].map(lambda v: v if v is None or isinstance(v, str) else str(v))
    return frame


def metric_columns(df: pd.DataFrame) -> list[str]:
    """The final-metric columns of a frame."""
    return [c for c in df.columns if c.startswith("final ")]


def choices(df: pd.DataFrame) -> dict[str, list[str]]:
    """The values each filter can take, from the runs present."""
    tags = sorted({t for ts in df["tags"] for t in ts}, key=str.lower) if len(df) else []
    return {
        "states": sorted(df["status"].dropna().unique()),
        "tasks": sorted(df["task"].dropna().unique()),
        "groups": sorted(df["group"].dropna().unique()),
        "tags": tags,
        "wandb_groups": sorted(df["wandb group"].dropna().unique()),
        "job_types": sorted(df["job type"].dropna().unique()),
    }


def apply(df: pd.DataFrame, f: Filters) -> pd.DataFrame:
    """The rows that pass every filter; tags match when a run has any chosen tag; text: every word must occur."""
    keep = pd.Series(True, index=df.index)
    if f.states:
        keep &= df["status"].isin(f.states)
    if f.tasks:
        keep &= df["task"].isin(f.tasks)
    if f.groups:
        keep &= df["group"].isin(f.groups)
    if f.wandb_groups:
        keep &= df["wandb group"].isin(f.wandb_groups)
    if f.job_types:
        keep &= df["job type"].isin(f.job_types)
    if f.tags:
        wanted = set(f.tags)
        keep &= df["tags"].map(lambda ts: bool(wanted & set(ts)))
    for word in f.text.lower().split():
        keep &= df["search"].str.contains(word, regex=False)
    return df[keep]


def by_wandb_group(df: pd.DataFrame) -> pd.DataFrame:
    """The rows with each W&B group's runs together (groups by name, runs without one last), each run a row."""
    order = df["wandb group"].isna().to_numpy(), df["wandb group"].fillna("").str.lower().to_numpy()
    return df.iloc[sorted(range(len(df)), key=lambda i: (order[0][i], order[1][i]))]


def wandb_group_ids(df: pd.DataFrame, group: str) -> list[str]:
    """The run ids of one W&B group."""
    return list(df.loc[df["wandb group"] == group, "run_id"])
