"""Pages of the run index (`runstore.run_index`) for a list of many runs: the runs a query and a list's filters
select, sorted by any field in SQL, one slice at a time with their total, and the values each filter can take.

A page of 100 runs out of 10,000 costs one indexed SELECT with LIMIT/OFFSET and one count: no run folder is
read. Filter values and words travel as `?` parameters; the SQL text is this module's constants and
`runstore.query_sql`'s. A run's state is the one a list shows (`runstore.index_states`: "stalled" for a running run
making no progress), taken at the `now` a caller passes (`Narrow.now`; the clock's when None). No JAX and no
Streamlit here.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from runstore import index_reader, index_states, query_sql
from runstore.index_rows import IndexedRun

# The text the list's search box looks in, as one lower-cased string a run (every word must occur in it).
SEARCH_TEXT = (
    "lower(coalesce(name, '') || ' ' || run_id || ' ' || coalesce(task, '') || ' ' || coalesce(notes, '') || ' ' "
    "|| coalesce(grp, '') || ' ' || coalesce(job_type, '') || ' ' || coalesce(config_json, '') || ' ' "
    "|| coalesce(tags_json, ''))"
)
POPULATION = "runs.kind = 'member'"  # grp is a population's id for a member, a W&B group for any other run
# Orders put before the chosen one: a W&B group's runs together (by group name, runs without one last).
BY_WANDB_GROUP = f"({POPULATION} OR coalesce(runs.grp, '') = ''), lower(runs.grp)"


def _by_population(newest: bool) -> str:
    """An order by created with each population's members together, in member order, where its newest (`newest`)
    or oldest member puts it; every other run where its own created puts it. The population's end is looked up
    in the index runs_population (one step a member), so a page of 10,000 runs still sorts in SQL alone."""
    end, direction = ("max", "DESC") if newest else ("min", "ASC")
    block = f"(SELECT {end}(m.created) FROM runs m WHERE m.kind = 'member' AND m.grp = runs.grp)"
    return (f"(CASE WHEN {POPULATION} THEN {block} ELSE runs.created END) {direction},"
            f" (CASE WHEN {POPULATION} THEN runs.grp END), runs.member, lower(runs.name)")  # fmt: skip


BY_POPULATION_NEWEST, BY_POPULATION_OLDEST = _by_population(True), _by_population(False)
FIRSTS = ("", BY_WANDB_GROUP, BY_POPULATION_NEWEST, BY_POPULATION_OLDEST)


def members_together(order: str) -> str:
    """The `first` order that keeps each population's members together in `order` when it is by created (newest
    or oldest first, as W&B groups runs); "" for any other order."""
    if order.lstrip("+-") != "created":
        return ""
    return BY_POPULATION_NEWEST if order.startswith("-") else BY_POPULATION_OLDEST


@dataclass
class Narrow:
    """A list's filters on top of a query (empty = everything): a run passes when it has one of the values
    picked in every filter, any of the tags picked, every word of `text`, and (when given) an id of `ids`.
    `now`: the time states are read at ("stalled": `runstore.index_states`); None: the clock's."""

    states: list[str] = field(default_factory=list)
    tasks: list[str] = field(default_factory=list)
    populations: list[str] = field(default_factory=list)
    wandb_groups: list[str] = field(default_factory=list)
    job_types: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    text: str = ""
    ids: list[str] | None = None
    now: float | None = None


def _in(column: str, values: list[Any]) -> str:
    return f"{column} IN ({', '.join('?' * len(values))})"


def conditions(narrow: Narrow | None) -> tuple[str, list[Any]]:
    """(SQL condition over `runs`, its parameters) for the filters of `narrow`."""
    if narrow is None:
        return "1", []
    parts: list[str] = []
    params: list[Any] = []
    if narrow.states:  # the state a list shows: "stalled" picks stalled runs, "running" the others running
        state, state_params = index_states.shown(index_states.at(narrow.now))
        parts.append(_in(state, narrow.states))
        params += [*state_params, *narrow.states]
    for column, values in (("runs.task", narrow.tasks), ("runs.job_type", narrow.job_types),
                           ("runs.run_id", narrow.ids)):  # fmt: skip
        if values is not None and (values or column == "runs.run_id"):
            parts.append(_in(column, values))
            params += list(values)
    if narrow.populations:
        parts.append(f"{POPULATION} AND {_in('runs.grp', narrow.populations)}")
        params += narrow.populations
    if narrow.wandb_groups:
        parts.append(f"NOT {POPULATION} AND {_in('runs.grp', narrow.wandb_groups)}")
        params += narrow.wandb_groups
    if narrow.tags:
        parts.append(f"EXISTS (SELECT 1 FROM tags t WHERE t.run = runs.id AND {_in('t.tag', narrow.tags)})")
        params += narrow.tags
    for word in narrow.text.lower().split():
        parts.append(f"instr({SEARCH_TEXT}, ?) > 0")
        params.append(word)
    return (" AND ".join(f"({p})" for p in parts) or "1"), params


def _now(narrow: Narrow | None) -> float:
    return index_states.at(narrow.now if narrow is not None else None)


def _where(query: str, narrow: Narrow | None) -> tuple[str, list[Any]]:
    cond, params = query_sql.where(query, _now(narrow))  # raises run_query.QueryError before the index is opened
    more, more_params = conditions(narrow)
    return f"({cond}) AND ({more})", [*params, *more_params]


@dataclass
class Page:
    """One slice of the runs selected, and how many are selected in all."""

    runs: list[IndexedRun]
    total: int


def page(root: str | os.PathLike | None = None, query: str = "", narrow: Narrow | None = None, *,
         order: str = "-created", first: str = "", limit: int = 100, offset: int = 0) -> Page:  # fmt: skip
    """The runs `query` and `narrow` select, sorted by `order` (any field, "-" for descending; `first`: one of this
    module's orders put before it), `limit` of them from `offset`, and their total.
    Raises run_query.QueryError (one line) for a query it cannot read, index_reader.IndexUnavailable."""
    cond, params = _where(query, narrow)
    order_sql, order_params = query_sql.order_by(order, _now(narrow))
    if first not in FIRSTS:
        raise ValueError("first: one of index_pages' orders")
    order_sql = f"{first}, {order_sql}" if first else order_sql
    sql = f"SELECT {index_reader.COLUMNS} FROM runs WHERE {cond} ORDER BY {order_sql} LIMIT ? OFFSET ?"
    found = index_reader.rows(root, sql, [*params, *order_params, int(limit), max(0, int(offset))])
    total = index_reader.rows(root, f"SELECT count(*) FROM runs WHERE {cond}", params)
    return Page([index_reader.run_of(r) for r in found], int(total[0][0]) if total else 0)


def count(root: str | os.PathLike | None = None, query: str = "", narrow: Narrow | None = None) -> int:
    """How many runs `query` and `narrow` select."""
    cond, params = _where(query, narrow)
    found = index_reader.rows(root, f"SELECT count(*) FROM runs WHERE {cond}", params)
    return int(found[0][0]) if found else 0


def matching(root: str | os.PathLike | None = None, query: str = "", narrow: Narrow | None = None,
             order: str = "-created", limit: int | None = None) -> list[IndexedRun]:  # fmt: skip
    """Every run (or the first `limit`) `query` and `narrow` select, in `order`."""
    cond, params = _where(query, narrow)
    order_sql, order_params = query_sql.order_by(order, _now(narrow))
    sql = f"SELECT {index_reader.COLUMNS} FROM runs WHERE {cond} ORDER BY {order_sql}"
    if limit is not None:
        sql, order_params = sql + " LIMIT ?", [*order_params, int(limit)]
    return [index_reader.run_of(r) for r in index_reader.rows(root, sql, [*params, *order_params])]


def matching_ids(root: str | os.PathLike | None = None, query: str = "", narrow: Narrow | None = None,
                 order: str = "-created") -> list[str]:  # fmt: skip
    """The run ids `query` and `narrow` select, in `order` (no run is built)."""
    cond, params = _where(query, narrow)
    order_sql, order_params = query_sql.order_by(order, _now(narrow))
    sql = f"SELECT run_id FROM runs WHERE {cond} ORDER BY {order_sql}"
    return [r[0] for r in index_reader.rows(root, sql, [*params, *order_params])]


def _distinct(root: str | os.PathLike | None, sql: str, params: list[Any] | None = None) -> list[str]:
    found = index_reader.rows(root, sql, params or [])
    return sorted({str(r[0]) for r in found if r[0] not in (None, "")}, key=lambda k: (k.lower(), k))


def choices(root: str | os.PathLike | None = None, now: float | None = None) -> dict[str, list[str]]:
    """The values each filter can take, over every indexed run (keys as `Narrow`'s fields; states as a list shows
    them at `now`, the clock's when None: "stalled" while a run is)."""
    state, state_params = index_states.shown(index_states.at(now))
    return {
        "states": _distinct(root, f"SELECT DISTINCT {state} FROM runs", state_params),
        "tasks": _distinct(root, "SELECT DISTINCT task FROM runs"),
        "populations": _distinct(root, f"SELECT DISTINCT grp FROM runs WHERE {POPULATION}"),
        "wandb_groups": _distinct(root, f"SELECT DISTINCT grp FROM runs WHERE NOT {POPULATION}"),
        "job_types": _distinct(root, "SELECT DISTINCT job_type FROM runs"),
        "tags": _distinct(root, "SELECT DISTINCT tag FROM tags"),
    }


def keys(root: str | os.PathLike | None = None, scope: str = "config", query: str = "",
         narrow: Narrow | None = None) -> list[str]:  # fmt: skip
    """The config keys with a plain value (number, text, bool), or the summary keys, of the runs `query` and
    `narrow` select (every run by default), sorted."""
    if scope not in ("config", "summary"):
        raise ValueError(f"scope: 'config' or 'summary', not {scope!r}")
    plain = " AND vtype IN ('num', 'str', 'bool')" if scope == "config" else ""
    if not query.strip() and narrow is None:
        return _distinct(root, f"SELECT DISTINCT key FROM {scope} WHERE 1{plain}", [])
    cond, params = _where(query, narrow)
    runs = f"SELECT id FROM runs WHERE {cond}"
    return _distinct(root, f"SELECT DISTINCT key FROM {scope} WHERE run IN ({runs}){plain}", params)
