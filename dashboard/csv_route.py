"""Where a run's streamed CSV is served (dashboard/server_app.py), and whether it is."""

from __future__ import annotations

import re
import urllib.parse
from pathlib import Path

from dashboard import launcher, url_paths

ROUTE_ON = False  # set by dashboard/server_app.py, the module `streamlit run` serves
RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")  # a run folder's name: never a path


def route() -> str:
    """The route's template (Starlette's), under the server's base URL path."""
    return url_paths.under_base("api", "runs", "{run_id}", "metrics.csv")


def path(run_id: str) -> str:
    """The URL path of run `run_id`'s CSV."""
    return url_paths.under_base("api", "runs", urllib.parse.quote(run_id, safe=""), "metrics.csv")


def run_folder(run_id: str) -> Path | None:
    """The folder of run `run_id` directly under the runs root, or None (unknown, or not a plain name)."""
    if not RUN_ID.fullmatch(run_id):
        return None
    folder = launcher.runs_root() / run_id
    return folder if folder.is_dir() and not folder.is_symlink() else None
