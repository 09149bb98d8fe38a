"""Where a run's streamed CSV is served (dashboard/server_app.py), and whether it is."""

from __future__ import annotations

import urllib.parse
from pathlib import Path

from dashboard.server import url_paths
from runstore import run_store, safe_files

ROUTE_ON = False  # set by dashboard/server_app.py, the module `streamlit run` serves
MAX_NAME_BYTES = 255  # a longer name is no folder on any common file system (ENAMETOOLONG)


def route() -> str:
    """The route's template (Starlette's), under the server's base URL path."""
    return url_paths.under_base("api", "runs", "{run_id}", "metrics.csv")


def path(run_id: str) -> str:
    """The URL path of run `run_id`'s CSV."""
    return url_paths.under_base("api", "runs", urllib.parse.quote(run_id, safe=""), "metrics.csv")


def run_folder(run_id: str) -> Path | None:
    """The folder of run `run_id` directly under the runs root, or None (unknown, or not a plain name).

    A plain name is any folder name (spaces, non-ASCII, even a newline) without "/" or NUL, not
    starting with ".", at most 255 bytes: never a path, never hidden, never too long to look up.
    """
    if not run_id or run_id.startswith(".") or "/" in run_id or "\0" in run_id:
        return None
    if len(run_id.encode("utf-8", "surrogateescape")) > MAX_NAME_BYTES:
        return None
    folder = run_store.runs_root() / run_id
    return folder if safe_files.is_real_dir(folder) else None
