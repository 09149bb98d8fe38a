"""Reading the run index (`runstore.run_index`): the runs a query selects, as `IndexedRun`s or as run ids.

Readers never write and never wait for the writer: the index is in WAL mode, so a read sees the last
committed update. A missing index reads as no runs (its writer builds it); a damaged one raises
`IndexUnavailable` with one line (its writer rebuilds it). No JAX and no Streamlit here.
"""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

from runstore import query_sql, run_index
from runstore.index_rows import IndexedRun

COLUMNS = "run_id, path, name, kind, state, message, task, grp, created, notes, config_json, tags_json, summary_json, job_type"


class IndexUnavailable(Exception):
    """The index could not be read (damaged, or replaced while read); the message is one line."""


def _connect(path: Path) -> sqlite3.Connection:
    con = sqlite3.connect(path, timeout=1.0, isolation_level=None, check_same_thread=False)
    con.execute("PRAGMA query_only = 1")  # a reader never writes, whatever it is asked
    return con


def _run(row: tuple) -> IndexedRun:
    summary = json.loads(row[12] or "{}")
    return IndexedRun(
        run_id=row[0], path=row[1], name=row[2], kind=row[3], state=row[4], message=row[5] or "", task=row[6],
        group=row[7] or "", created=row[8] or 0.0, notes=row[9] or "", config=json.loads(row[10] or "{}"),
        tags=json.loads(row[11] or "[]"), summary=summary, job_type=row[13] or "",
    )  # fmt: skip


def rows(root: str | os.PathLike | None, sql: str, params: list) -> list[tuple]:
    """The rows of one SELECT over the index (built from constants, values as `params`); [] while there is no index.
    Raises IndexUnavailable (one line) when the index cannot be read."""
    path = run_index.index_path(root)
    if not path.is_file() or path.is_symlink():
        return []
    try:
        con = _connect(path)
        try:
            return con.execute(sql, params).fetchall()
        finally:
            con.close()
    except sqlite3.Error as exc:
        if "no such table" in str(exc) or "no such column" in str(exc):
            return []  # the writer is creating it (or rebuilding an index of an older schema)
        raise IndexUnavailable(f"run index {path}: cannot be read ({exc}); it is rebuilt on its next update") from None


def run_of(row: tuple) -> IndexedRun:
    """An `IndexedRun` from a row of `COLUMNS`."""
    return _run(row)


def _select(root: str | os.PathLike | None, columns: str, query: str, order: str, limit: int | None) -> list[tuple]:
    """Rows of `columns` for the runs `query` selects, in `order`. Raises run_query.QueryError, IndexUnavailable."""
    cond, params = query_sql.where(query)  # a bad query fails here, before the index is opened
    order_sql, order_params = query_sql.order_by(order)
    sql = f"SELECT {columns} FROM runs WHERE {cond} ORDER BY {order_sql}"
    if limit is not None:
        sql += " LIMIT ?"
        order_params = [*order_params, int(limit)]
    return rows(root, sql, [*params, *order_params])


def search(root: str | os.PathLike | None = None, query: str = "", order: str = "-created",
           limit: int | None = None) -> list[IndexedRun]:  # fmt: skip
    """The runs of the index that `query` selects (`runstore.run_query`), in `order` ("-created": newest first;
    any field, "-" for descending). Raises run_query.QueryError (one line) for a query it cannot read."""
    return [_run(r) for r in _select(root, COLUMNS, query, order, limit)]


def matching_ids(root: str | os.PathLike | None = None, query: str = "") -> list[str]:
    """The run ids `query` selects, newest first (cheaper than `search`: no run is built)."""
    return [r[0] for r in _select(root, "run_id", query, "-created", None)]


def indexed_count(root: str | os.PathLike | None = None) -> int:
    """How many runs the index holds now (0 when there is no index yet, or it cannot be read)."""
    try:
        found = rows(root, "SELECT count(*) FROM runs", [])
    except IndexUnavailable:
        return 0
    return int(found[0][0]) if found else 0
