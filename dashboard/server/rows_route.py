"""The records a live chart has not drawn yet: a run's new metrics.jsonl rows, for some tags.

GET <base>/api/runs/<run id>/rows?after=OFFSET&tag=train/loss&tag=test/loss answers
{"offset": END, "x": {tag: [step, ...]}, "y": {tag: [value, ...]}, "wall": {tag: [seconds, ...]}}: the
finite values of each tag in the whole lines written after byte OFFSET, their steps and wall seconds, and
where the next call starts. A Live or Run detail chart (dashboard/panels/static/chart/feed.js) asks for it
when the run's records grew and appends them in place, so a record reaches the chart without a rerun of the
page: the panel reruns for records only every few seconds, each rerun bringing a freshly downsampled spec.

GET <base>/api/runs/<run id>/series?tag=lr answers {"x": {tag: [step, ...]}, "y": {tag: [value, ...]}}: a
key's whole series as the server holds it (a bounded MetricTable), for a chart whose x axis
is that logged scalar (W&B's x-axis picker).

At most MAX_BYTES are read per call (whole lines): a client further behind gets {"behind": true}
and waits for the page's next figure. `serve` answers the route; dashboard/server_app.py serves it with
the change route (`changes_route.ROUTE_ON`): the pages feed only runs they poll.
"""

from __future__ import annotations

import math
import urllib.parse
from typing import Any

import numpy as np
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response

from dashboard.server import run_lookup, url_paths
from runstore.metrics.metric_table import MetricTable
from runstore.run_folder import RunFolder

MAX_OFFSET_DIGITS = 19  # any file's size fits; int() of a longer text could cost seconds or raise
MAX_BYTES = 1 << 20  # ~10,000 records: more than a few seconds of any run's rows
MAX_TAGS = 16


def route() -> str:
    """The route's template (Starlette's), under the server's base URL path."""
    return url_paths.under_base("api", "runs", "{run_id}", "rows")


def series_route() -> str:
    """The whole-series route's template (Starlette's), under the server's base URL path."""
    return url_paths.under_base("api", "runs", "{run_id}", "series")


def series_path(run_id: str) -> str:
    """The URL path of run `run_id`'s whole series (the client adds `&tag=KEY`)."""
    return url_paths.under_base("api", "runs", urllib.parse.quote(run_id, safe=""), "series") + "?"


def path(run_id: str, tags: list[str]) -> str:
    """The URL path of run `run_id`'s new rows of `tags` (the client adds `&after=OFFSET`)."""
    query = urllib.parse.urlencode([("tag", t) for t in tags[:MAX_TAGS]])
    return url_paths.under_base("api", "runs", urllib.parse.quote(run_id, safe=""), "rows") + "?" + query


def rows(run_id: str, after: int, tags: list[str]) -> dict[str, Any] | None:
    """The new rows of `tags` after byte `after` of the run's metrics.jsonl; None for no such run."""
    folder = run_lookup.run_folder(run_id)
    if folder is None:
        return None
    try:
        size = RunFolder(folder).records_size()
    except OSError:
        size = 0
    if not 0 <= size - after <= MAX_BYTES:  # replaced, truncated, or far behind: the page's next figure starts over
        return {"offset": after, "behind": True}
    records, end = RunFolder(folder).records(after, max_bytes=MAX_BYTES)
    xs: dict[str, list[int]] = {t: [] for t in tags[:MAX_TAGS]}
    ys: dict[str, list[float]] = {t: [] for t in tags[:MAX_TAGS]}
    walls: dict[str, list[float | None]] = {t: [] for t in tags[:MAX_TAGS]}
    for rec in records:
        step = rec.get("step")
        if not isinstance(step, int):
            continue
        for tag in xs:
            value = rec.get(tag)
            if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
                xs[tag].append(step)
                ys[tag].append(value)
                wall = rec.get("wall")
                walls[tag].append(wall if isinstance(wall, int | float) and math.isfinite(wall) else None)
    return {"offset": end, "x": xs, "y": ys, "wall": walls}


def whole_series(run_id: str, tags: list[str]) -> dict[str, Any] | None:
    """Each of `tags`' (step, value) pairs as the server holds them (bounded); None for no such run."""
    folder = run_lookup.run_folder(run_id)
    if folder is None:
        return None
    table = MetricTable().update(folder)  # bounded columns, from the run's columnar cache where it has one
    xs, ys = {}, {}
    for tag in tags[:MAX_TAGS]:
        step, value = table.series(tag, "step")
        ok = np.isfinite(value) & np.isfinite(step)
        xs[tag], ys[tag] = step[ok].tolist(), value[ok].tolist()
    return {"x": xs, "y": ys}


def serve_series(request: Request) -> Response:
    """The whole-series route's answer: `whole_series` as JSON; 404 for no such run."""
    run_id = request.path_params["run_id"]
    answer = whole_series(run_id, request.query_params.getlist("tag"))
    if answer is None:
        return run_lookup.no_run(run_id)
    return JSONResponse(answer, headers={"Cache-Control": "no-store"})


def serve(request: Request) -> Response:
    """The route's answer: `rows` as JSON; 400 for an `after` that is no byte offset, 404 for no such run."""
    run_id = request.path_params["run_id"]
    after = request.query_params.get("after", "0")
    if not (after.isascii() and after.isdigit() and len(after) <= MAX_OFFSET_DIGITS):  # "²" is a digit to Python
        msg = f"after: a byte offset into metrics.jsonl (a whole number of at most {MAX_OFFSET_DIGITS} digits 0-9)"
        return PlainTextResponse(msg, status_code=400)
    answer = rows(run_id, int(after), request.query_params.getlist("tag"))
    if answer is None:
        return run_lookup.no_run(run_id)
    return JSONResponse(answer, headers={"Cache-Control": "no-store"})
