"""`jaxdash runs`: the runs a query selects, as a table or JSON, from a shell.

    jaxdash runs --filter 'config.lr < 0.01 and summary.test/acc.max > 0.9' --columns config.lr,summary.test/acc
    jaxdash runs --runs DIR --filter 'tags contains "baseline"' --json

Exit status 0 with the runs (none is not an error), 2 with one line on stderr for a query it cannot read.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from jaxdash.public_api import Api, Run
from runstore import config_keys
from runstore.index_reader import IndexUnavailable
from runstore.run_query import Field, QueryError, parse_field

RUN_ATTRIBUTES = {"run_id": "id", "grp": "group", "task": "project", "created": "created_at"}  # query column -> Run


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="jaxdash runs", description="List the runs a query selects (docs/queries.md).")
    p.add_argument("--runs", default=None, help="runs folder (default: $JAXDASH_RUNS, else the per-user folder)")
    p.add_argument("--filter", default="", help="a query, e.g. 'config.lr < 0.01 and tags contains \"baseline\"'")
    p.add_argument("--order", default="-created", help="sort field, '-' for descending (default: -created)")
    p.add_argument("--columns", default="", help="fields to show besides id, state and name, comma-separated")
    p.add_argument("--json", action="store_true", help="one JSON list of runs (id, name, state, tags, config, summary)")
    return p


def _value(run: Run, field: Field) -> Any:
    if field.scope == "config":
        return config_keys.flatten(run.config).get(field.key)
    if field.scope == "summary":
        return run.summary_stats.get(field.key, {}).get(field.aggregate)
    if field.scope == "tags":
        return ",".join(run.tags)
    return getattr(run, RUN_ATTRIBUTES.get(field.key, field.key), None)


def _cell(v: Any) -> str:
    if v is None:
        return "-"
    return format(v, ".6g") if isinstance(v, float) else str(v)


def table(runs: list[Run], columns: list[tuple[str, Field]]) -> str:
    """The runs as aligned text columns: id, state, name, then `columns`."""
    head = ["id", "state", "name", *(name for name, _ in columns)]
    rows = [[r.id, r.state, r.name, *(_cell(_value(r, f)) for _, f in columns)] for r in runs]
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows, strict=True)]
    return "\n".join(
        "  ".join(str(x).ljust(w) for x, w in zip(row, widths, strict=True)).rstrip() for row in [head, *rows]
    )


def main(argv: list[str] | None = None) -> int:
    """`jaxdash runs ARGS`; returns the exit status."""
    args = parser().parse_args(argv)
    try:
        columns = [(c.strip(), parse_field(c)) for c in args.columns.split(",") if c.strip()]
        runs = Api({"runs": args.runs}).runs(filter=args.filter, order=args.order)
    except (QueryError, IndexUnavailable) as exc:
        print(f"jaxdash runs: {exc}", file=sys.stderr)
        return 2
    if args.json:
        doc = [{"id": r.id, "name": r.name, "state": r.state, "tags": r.tags, "config": r.config,
                "summary": r.summary_stats, "folder": str(r.folder)} for r in runs]  # fmt: skip
        print(json.dumps(doc, indent=1, default=str))
    else:
        print(table(runs, columns))
        print(f"{len(runs)} run{'s' if len(runs) != 1 else ''}", file=sys.stderr)
    return 0
