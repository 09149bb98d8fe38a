"""A parsed run query (`runstore.run_query`) as parameterized SQL over the run index (`runstore.run_index`).

Every value travels as a `?` parameter; the SQL text is built from this module's constants and the column
names `run_query` maps fields to, never from the query's words. A comparison on a config or summary key is
true for a run that has the key with a value of the literal's kind that compares true (`config.lr < 0.1`
leaves out a run without `lr` and one whose `lr` is text); `!=` is true for a run that has the key with
another value; `not (...)` is true for every other run. Given a `now`, `state` is the state a list shows at that
time (`runstore.index_states`: "stalled" for a running run making no progress, which "running" then leaves out);
without one it is status.json's own (W&B's states, as the client's `Api().runs` reports them). No JAX and no
Streamlit here.
"""

from __future__ import annotations

from typing import Any

from runstore import index_states
from runstore.run_query import All, Any_, Compare, Field, Not, parse, parse_field

SQL_OPS = {"=": "=", "!=": "=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}  # != is NOT (=): see _config
NUMERIC = "typeof({col}) IN ('integer', 'real')"
AGGREGATE_COLUMNS = {"last": "s.last", "min": "s.min", "max": "s.max"}
RUN_COLUMNS = ("run_id", "name", "state", "kind", "task", "grp", "notes", "created")


def _vtype(value: Any) -> str:
    return "bool" if isinstance(value, bool) else "str" if isinstance(value, str) else "num"


def _param(value: Any) -> Any:
    return int(value) if isinstance(value, bool) else value


def _config_test(op: str, value: Any) -> tuple[str, list[Any]]:
    """The condition on one config row (c.vtype, c.value) for `op value` (op not "!=", "in")."""
    if op == "contains":
        return "c.vtype IN ('str', 'json') AND instr(c.value, ?) > 0", [value]
    return f"c.vtype = ? AND c.value {SQL_OPS[op]} ?", [_vtype(value), _param(value)]


def _summary_test(field: Field, op: str, value: Any) -> tuple[str, list[Any]]:
    """The condition on one summary row for `op value` (op not "!=", "in")."""
    col = AGGREGATE_COLUMNS[field.aggregate]
    if op == "contains":
        return f"typeof({col}) = 'text' AND instr({col}, ?) > 0", [value]
    kind = "typeof({col}) = 'text'" if isinstance(value, str) else NUMERIC
    return f"{kind.format(col=col)} AND {col} {SQL_OPS[op]} ?", [value]


def _keyed(node: Compare) -> tuple[str, list[Any]]:
    """A comparison on a config or summary key: EXISTS over its rows for this run."""
    field, op = node.field, node.op
    table, alias = ("config", "c") if field.scope == "config" else ("summary", "s")

    def test(o: str, v: Any) -> tuple[str, list[Any]]:
        return _config_test(o, v) if field.scope == "config" else _summary_test(field, o, v)

    if op in ("in", "!="):
        parts = [test("=", v) for v in node.values]
        cond = "(" + " OR ".join(p for p, _ in parts) + ")"
        cond = f"NOT {cond}" if op == "!=" else cond
        params = [p for _, ps in parts for p in ps]
    else:
        cond, params = test(op, node.values[0])
    sql = f"EXISTS (SELECT 1 FROM {table} {alias} WHERE {alias}.run = runs.id AND {alias}.key = ? AND {cond})"
    return sql, [field.key, *params]


def _column(col: str, now: float | None) -> tuple[str, list[Any]]:
    """(SQL expression, its parameters) of one of the runs table's columns a query names."""
    if col not in RUN_COLUMNS:  # run_query maps every field to one of these; anything else is a bug, not SQL
        raise ValueError(f"no such column {col!r}")
    return index_states.shown(now) if col == "state" and now is not None else (f"runs.{col}", [])


def _compare(node: Compare, now: float | None) -> tuple[str, list[Any]]:
    field, op, values = node.field, node.op, list(node.values)
    if field.scope in ("config", "summary"):
        return _keyed(node)
    if field.scope == "tags":
        exists = "EXISTS (SELECT 1 FROM tags t WHERE t.run = runs.id AND t.tag IN ({}))"
        marks = ", ".join("?" * len(values))
        return (f"NOT {exists.format(marks)}" if op == "!=" else exists.format(marks)), values
    col, col_params = _column(field.key, now)
    if op == "in":
        return f"{col} IN ({', '.join('?' * len(values))})", [*col_params, *values]
    if op == "contains":
        return f"instr(lower({col}), lower(?)) > 0", [*col_params, *values]
    return f"{col} {'!=' if op == '!=' else SQL_OPS[op]} ?", [*col_params, *values]


def sql_of(tree: object, now: float | None = None) -> tuple[str, list[Any]]:
    """(SQL condition over `runs`, its parameters) for a parsed query (`now`: see the module's docstring)."""
    if isinstance(tree, Compare):
        return _compare(tree, now)
    if isinstance(tree, Not):
        sql, params = sql_of(tree.part, now)
        return f"NOT ({sql})", params
    if isinstance(tree, (All, Any_)):
        parts = [sql_of(p, now) for p in tree.parts]
        joiner = " AND " if isinstance(tree, All) else " OR "
        return "(" + joiner.join(f"({s})" for s, _ in parts) + ")", [p for _, ps in parts for p in ps]
    raise TypeError(f"not a query tree: {type(tree).__name__}")


def where(query: str, now: float | None = None) -> tuple[str, list[Any]]:
    """(SQL condition, parameters) for a query's text; ("1", []) for an empty query. Raises run_query.QueryError.
    `now`: the time `state` is read at as a list shows it ("stalled"); None: status.json's own state."""
    tree = parse(query)
    return ("1", []) if tree is None else sql_of(tree, now)


def order_by(order: str, now: float | None = None) -> tuple[str, list[Any]]:
    """An ORDER BY clause for W&B's `order` ("-created", "+summary.test/acc.max", "config.lr"), empty values last
    (`now`: as `where`'s, for an order by state)."""
    desc = order.startswith("-")
    field = parse_field(order.lstrip("+-") or "created")
    if field.scope == "config":
        expr, params = "(SELECT c.value FROM config c WHERE c.run = runs.id AND c.key = ?)", [field.key]
    elif field.scope == "summary":
        col = AGGREGATE_COLUMNS[field.aggregate]
        expr, params = f"(SELECT {col} FROM summary s WHERE s.run = runs.id AND s.key = ?)", [field.key]
    elif field.scope == "tags":
        expr, params = "runs.tags_json", []
    else:
        expr, params = _column(field.key, now)
    return f"({expr}) IS NULL, {expr} {'DESC' if desc else 'ASC'}, runs.id", params * 2
