"""Lists of runs and queries over many runs, from the run index (SQLite, rebuilt from the run folders): each run
with its kind, state, config, tags, notes and summary (`IndexedRun`), a page of them sorted in SQL, their
count, the values each filter can take and the keys a grouping can use. Every read here raises
`IndexUnavailable` while the index cannot be read, and `QueryError` (one line) for a query it cannot parse."""

from __future__ import annotations

import os
from pathlib import Path

from runstore import index_keeper, index_pages, index_reader, run_states
from runstore.index_pages import Narrow, Page
from runstore.index_reader import IndexUnavailable as IndexUnavailable
from runstore.index_rows import IndexedRun
from runstore.run_query import QueryError as QueryError

BY_WANDB_GROUP = index_pages.BY_WANDB_GROUP  # an order: a W&B group's runs together, each run its own row


def members_together(order: str) -> str:
    """The order to put before `order` so that a population's members come as one block."""
    return index_pages.members_together(order)


def page(root: Path, query: str = "", narrow: Narrow | None = None, *, order: str = "-created", first: str = "",
         limit: int = 100, offset: int = 0) -> Page:  # fmt: skip
    """The runs `query` and `narrow` select, sorted by `order` (`first`: an order put before it), `limit` of them
    from `offset`, and their total."""
    return index_pages.page(root, query, narrow, order=order, first=first, limit=limit, offset=offset)


def count(root: Path, query: str = "", narrow: Narrow | None = None) -> int:
    """How many runs `query` and `narrow` select."""
    return index_pages.count(root, query, narrow)


def matching(root: Path, query: str = "", narrow: Narrow | None = None) -> list[IndexedRun]:
    """Every run `query` and `narrow` select, newest first."""
    return index_pages.matching(root, query, narrow)


def matching_ids(root: Path, query: str = "", narrow: Narrow | None = None) -> list[str]:
    """The run ids `query` and `narrow` select, newest first (no run is built)."""
    return index_pages.matching_ids(root, query, narrow)


def choices(root: Path, now: float | None = None) -> dict[str, list[str]]:
    """The values each filter can take over every indexed run (keys as `Narrow`'s fields)."""
    return index_pages.choices(root, now)


def keys(root: Path, scope: str = "config", query: str = "", narrow: Narrow | None = None) -> list[str]:
    """The config keys with a plain value ("config"), or the summary keys ("summary"), of the selected runs."""
    return index_pages.keys(root, scope, query, narrow)


def indexed_count(root: Path) -> int:
    """How many runs the index holds."""
    return index_reader.indexed_count(root)


def indexed_activity(root: Path) -> dict[str, bool]:
    """{run folder name under `root`: whether the index holds it as active} (folders elsewhere left out)."""
    prefix = str(root) + os.sep
    rows = index_reader.rows(root, "SELECT path, state FROM runs", [])
    return {p[len(prefix) :]: s in run_states.ACTIVE for p, s in rows if p.startswith(prefix)}


def index_fresh(root: Path) -> bool:
    """Start the root's index keeper (once a process), ask it for an update now and wait for it a bounded time;
    whether the index is current."""
    return index_keeper.fresh(root)


def index_update_seconds(root: Path) -> float:
    """The CPU seconds the keeper's last update of the index took (0 before the first)."""
    return index_keeper.update_cpu_seconds(root)
