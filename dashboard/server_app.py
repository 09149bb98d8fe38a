"""What `streamlit run` serves: the dashboard's pages (dashboard/app.py) plus HTTP routes that
Streamlit has no element for: a run's metrics as a streamed CSV download, and what a Live page
polls (the runs' change signature, a run's new rows, its progress line and tiles).

A download button holds its whole file in the server's memory (66 MB of CSV for a run of a
million records). GET <base>/api/runs/<run id>/metrics.csv instead sends the CSV as it is written,
one cached part (~4 MB of records) at a time (runstore/metrics/metric_csv.py): the server never holds
more than a part, however long the run. The pages link to it when this module is what is served
(`ROUTE_ON`); served as plain dashboard/app.py (AppTest, an old start command), they offer the
download button instead.

Every request passes the host check (DNS rebinding, server/host_check.py) and every response
carries headers that forbid other sites to frame it and pages to load images from other hosts
(server/frame_headers.py). The routes import no page module: a page module imported off a script
run declared its components unregistered (#36); the poll's numbers come from panels/run_numbers.py.
"""

from __future__ import annotations

import sys
import urllib.parse
from pathlib import Path

# `streamlit run` puts dashboard/ on sys.path, not the repository root that holds the packages.
ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import streamlit as st  # noqa: E402
from starlette.middleware import Middleware  # noqa: E402
from starlette.requests import Request  # noqa: E402
from starlette.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse  # noqa: E402
from starlette.routing import Route  # noqa: E402

from dashboard.panels import run_numbers  # noqa: E402
from dashboard.server import (  # noqa: E402
    changes_route,
    csv_route,
    frame_headers,
    host_check,
    poll_route,
    rows_route,
    stale_temp,
)
from runstore import run_store, safe_files  # noqa: E402
from runstore.metrics import metric_csv  # noqa: E402
from runstore.run_folder import RunFolder  # noqa: E402


def content_disposition(filename: str) -> str:
    """An attachment header for any file name: an ASCII fallback, and the name itself per RFC 6266 / 5987."""
    fallback = "".join(c if c.isascii() and c.isprintable() and c not in '"\\' else "_" for c in filename)
    return f"attachment; filename=\"{fallback}\"; filename*=UTF-8''{urllib.parse.quote(filename, safe='')}"


def _no_run(run_id: str) -> Response:
    """404 for a run id that names no run folder under the runs root (csv_route.run_folder)."""
    return PlainTextResponse(f"No run {run_id!r} under {run_store.runs_root()}.", status_code=404)


def metrics_csv(request: Request) -> Response:
    """Every record of the run's metrics.jsonl as CSV, streamed as it is written."""
    run_id = request.path_params["run_id"]
    folder = csv_route.run_folder(run_id)
    if folder is None:
        return _no_run(run_id)
    records = RunFolder(folder).records_path
    if not records.exists():
        return PlainTextResponse(f"Run {run_id!r} has logged no metrics yet (no metrics.jsonl).", status_code=404)
    if not safe_files.is_regular(records):
        msg = f"Run {run_id!r}: metrics.jsonl is {safe_files.NOT_REGULAR}; replace it with the run's own file."
        return PlainTextResponse(msg, status_code=404)
    return StreamingResponse(
        metric_csv.iter_csv(folder),  # a plain iterator: Starlette runs it in a worker thread
        media_type="text/csv",
        headers={"Content-Disposition": content_disposition(f"{run_id}.csv")},
    )


def _numbers_of(run_id: str) -> dict | None:
    """A run's progress line and tile texts (run_numbers), from the status and metric caches the pages share."""
    from dashboard import state  # its st.cache_resource needs the running server: imported at the first poll

    folder = csv_route.run_folder(run_id)
    return None if folder is None else run_numbers.numbers(state.run_status(folder), state.metrics(folder))


def poll(request: Request) -> Response:
    """What a page polls, in one request: signatures and numbers (dashboard/server/poll_route.py)."""
    try:
        answer = poll_route.answer(request.query_params.get("q", ""), _numbers_of)
    except poll_route.BadPoll as exc:
        return PlainTextResponse(str(exc), status_code=400)
    return JSONResponse(answer, headers={"Cache-Control": "no-store"})


stale_temp.remove_leftovers()  # plotly.js copies of servers before #36 that are gone
csv_route.ROUTE_ON = changes_route.ROUTE_ON = True  # the poll and rows routes come with them
app = st.App(
    Path(__file__).parent / "app.py",
    routes=[
        Route(csv_route.route(), metrics_csv),
        Route(rows_route.route(), rows_route.serve),
        Route(poll_route.route(), poll),
    ],
    middleware=[
        Middleware(frame_headers.FrameHeaders),  # outermost: every response, a refused one too, carries them
        Middleware(host_check.HostCheck),  # DNS rebinding: only our own Host and Origin, on every route
    ],
)
