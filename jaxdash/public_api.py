"""`jaxdash.Api()`: the runs under a runs folder, selected by a query, shaped like W&B's public API.

    api = jaxdash.Api()
    for run in api.runs(filter='config.lr < 0.01 and summary.test/acc.max > 0.9 and tags contains "baseline"'):
        print(run.id, run.name, run.config["lr"], run.summary["test/acc"], run.tags, run.state)

The query language is `runstore.run_query`'s (docs/queries.md). Runs are read from the run index
(`runstore.run_index`), brought up to date first unless another process (the dashboard) is its writer now.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from runstore import index_reader, run_index, run_query, run_store
from runstore.index_rows import IndexedRun
from runstore.run_folder import RunFolder
from runstore.run_query import QueryError  # noqa: F401 - raised by Api.runs, importable from here

W_AND_B_ORDER = {"created_at": "created", "summary_metrics.": "summary.", "display_name": "name"}


class Run:
    """One run as `Api.runs` returns it: W&B's public `Run` attributes where they have a meaning here."""

    def __init__(self, indexed: IndexedRun) -> None:
        self._indexed = indexed
        self.id: str = indexed.run_id
        self.name: str = indexed.name
        self.display_name: str = indexed.name
        self.state: str = indexed.state
        self.config: dict[str, Any] = dict(indexed.config)
        self.tags: list[str] = list(indexed.tags)
        self.notes: str = indexed.notes
        self.group: str = indexed.group
        self.project: str = indexed.task
        self.kind: str = indexed.kind
        self.folder = Path(indexed.path)
        # W&B's run.summary: each key's last value; summary_stats adds the min and max over the run's records
        self.summary: dict[str, Any] = {k: v[0] for k, v in indexed.summary.items() if v[0] is not None}
        self.summary_stats: dict[str, dict[str, Any]] = {
            k: {"last": v[0], "min": v[1], "max": v[2]} for k, v in indexed.summary.items()
        }

    @property
    def created_at(self) -> str:
        """When the run started, as W&B writes it (ISO 8601, UTC)."""
        return datetime.fromtimestamp(self._indexed.created, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")

    def scan_history(self, keys: list[str] | None = None) -> Iterator[dict[str, Any]]:
        """The run's logged rows in order (only `keys` and "step" when given), read from its folder."""
        for record in RunFolder(self.folder).records()[0]:
            yield record if keys is None else {k: record[k] for k in ("step", *keys) if k in record}

    def __repr__(self) -> str:
        return f"<Run {self.id} ({self.state})>"


def _order(order: str) -> str:
    """W&B's order names ("-created_at", "+summary_metrics.loss") in the query's words."""
    sign, name = (order[0], order[1:]) if order[:1] in "+-" else ("", order)
    for theirs, ours in W_AND_B_ORDER.items():
        if name.startswith(theirs):
            name = ours + name[len(theirs) :]
    return sign + name


class Api:
    """Reading runs back, as `wandb.Api()`; `overrides={"runs": DIR}` reads another runs folder."""

    def __init__(self, overrides: dict[str, Any] | None = None, timeout: int | None = None, **_: Any) -> None:
        self.root = run_store.runs_root((overrides or {}).get("runs"))

    def _root_and_project(self, path: str | os.PathLike | None) -> tuple[Path, str | None]:
        if path is None:
            return self.root, None
        if Path(path).expanduser().is_dir():
            return run_store.runs_root(path), None
        return self.root, str(path).rstrip("/").rsplit("/", 1)[-1]  # W&B's "entity/project": the project

    def runs(self, path: str | os.PathLike | None = None, filters: str | dict | None = None, order: str = "-created_at",
             per_page: int | None = None, filter: str | None = None, **_: Any) -> list[Run]:  # noqa: A002 - W&B's name  # fmt: skip
        """The runs `filter` selects (every run when empty), newest first unless `order` says otherwise.

        `path`: a runs folder, or a project name ("entity/project" as W&B's; a client run's project is its task).
        Raises `QueryError` (one line naming the position and what was expected) for a query it cannot read.
        """
        if isinstance(filters, dict):
            raise ValueError(
                "Api.runs(filters={...}) (W&B's MongoDB form) is not read here; pass a query: "
                "filter='config.lr < 0.01 and summary.test/acc.max > 0.9' (see docs/queries.md)"
            )
        query = filter if filter is not None else (filters or "")
        root, project = self._root_and_project(path)
        run_query.parse(query)  # a query it cannot read fails before any index work
        run_index.update(root)  # skipped while another process writes the index: its last update is read
        found = [Run(r) for r in index_reader.search(root, query, _order(order))]
        return [r for r in found if project is None or r.project == project]

    def run(self, path: str) -> Run:
        """One run by its id ("entity/project/<id>" or "<id>"); ValueError when there is none."""
        run_id = str(path).rstrip("/").rsplit("/", 1)[-1]
        quoted = run_id.replace("\\", "\\\\").replace('"', '\\"')  # the query's string escapes
        found = self.runs(filter=f'id = "{quoted}"')
        if not found:
            raise ValueError(f"no run {run_id!r} under {self.root}")
        return found[0]
