"""Which run a route's run id names: a plain folder name directly under the runs root, or none.

Every route of a run (its CSV, its new rows, the poll's signatures and numbers) looks its id up here,
so a crafted id (a path, a hidden name, one too long to look up) never reaches a file outside the root.
"""

from __future__ import annotations

from pathlib import Path

from starlette.responses import PlainTextResponse, Response

from dashboard.reading import provider

MAX_NAME_BYTES = 255  # a longer name is no folder on any common file system (ENAMETOOLONG)


def run_folder(run_id: str) -> Path | None:
    """The folder of run `run_id` directly under the runs root, or None (unknown, or not a plain name).

    A plain name is any folder name (spaces, non-ASCII, even a newline) without "/" or NUL, not
    starting with ".", at most 255 bytes: never a path, never hidden, never too long to look up.
    """
    if not run_id or run_id.startswith(".") or "/" in run_id or "\0" in run_id:
        return None
    if len(run_id.encode("utf-8", "surrogateescape")) > MAX_NAME_BYTES:
        return None
    return provider.run_under_root(run_id)


def no_run(run_id: str) -> Response:
    """404 for a run id that names no run folder under the runs root."""
    return PlainTextResponse(f"No run {run_id!r} under {provider.runs_root()}.", status_code=404)
