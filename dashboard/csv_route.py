"""Where a run's streamed CSV is served (dashboard/server_app.py), and whether it is."""

from __future__ import annotations

import urllib.parse

from streamlit import config

ROUTE_ON = False  # set by dashboard/server_app.py, the module `streamlit run` serves


def _base() -> str:
    base = (config.get_option("server.baseUrlPath") or "").strip("/")
    return f"/{base}" if base else ""


def route() -> str:
    """The route's template (Starlette's), under the server's base URL path."""
    return f"{_base()}/api/runs/{{run_id}}/metrics.csv"


def path(run_id: str) -> str:
    """The URL path of run `run_id`'s CSV."""
    return f"{_base()}/api/runs/{urllib.parse.quote(run_id, safe='')}/metrics.csv"
