"""A run's metrics as a streamed CSV: GET <base>/api/runs/<run id>/metrics.csv (served by dashboard/server_app.py)."""

from __future__ import annotations

import urllib.parse

from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response, StreamingResponse

from dashboard.reading import provider
from dashboard.server import run_lookup, url_paths

ROUTE_ON = False  # set by dashboard/server_app.py, the module `streamlit run` serves


def route() -> str:
    """The route's template (Starlette's), under the server's base URL path."""
    return url_paths.under_base("api", "runs", "{run_id}", "metrics.csv")


def path(run_id: str) -> str:
    """The URL path of run `run_id`'s CSV."""
    return url_paths.under_base("api", "runs", urllib.parse.quote(run_id, safe=""), "metrics.csv")


def content_disposition(filename: str) -> str:
    """An attachment header for any file name: an ASCII fallback, and the name itself per RFC 6266 / 5987."""
    fallback = "".join(c if c.isascii() and c.isprintable() and c not in '"\\' else "_" for c in filename)
    return f"attachment; filename=\"{fallback}\"; filename*=UTF-8''{urllib.parse.quote(filename, safe='')}"


def serve(request: Request) -> Response:
    """Every record of the run's metrics.jsonl as CSV, streamed as it is written; 404 naming what is missing."""
    run_id = request.path_params["run_id"]
    folder = run_lookup.run_folder(run_id)
    if folder is None:
        return run_lookup.no_run(run_id)
    problem = provider.csv_problem(folder)
    if problem is not None:
        return PlainTextResponse(f"Run {run_id!r}{problem}.", status_code=404)
    return StreamingResponse(
        provider.csv_chunks(folder),  # a plain iterator: Starlette runs it in a worker thread
        media_type="text/csv",
        headers={"Content-Disposition": content_disposition(f"{run_id}.csv")},
    )
