"""The records a live chart has not drawn yet, and a key's whole series.

`rows(run_id, after, tags)` answers {"offset": END, "x": {tag: [step, ...]}, "y": {tag: [value, ...]},
"wall": {tag: [seconds, ...]}}: the finite values of each tag in the whole lines written after byte `after`
of the run's metrics.jsonl (at most MAX_BYTES of them), their steps and wall seconds, and where the next read
starts. The tab's push stream (push_route.py, push_watch.py) sends it to a Live or Run detail chart
(dashboard/panels/static/chart/feed.js) as the run writes, so a record reaches the chart without a rerun.

GET <base>/api/runs/<run id>/series?tag=lr answers {"x": {tag: [step, ...]}, "y": {tag: [value, ...]}}: a
key's whole series as the server holds it (a bounded MetricTable), for a chart whose x axis
is that logged scalar (W&B's x-axis picker). dashboard/server_app.py serves it.
"""

from __future__ import annotations

import math
import urllib.parse
from typing import Any

import numpy as np
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from dashboard.reading import provider
from dashboard.server import run_lookup, url_paths

MAX_BYTES = 1 << 20  # ~10,000 records: more than a few seconds of any run's rows
MAX_TAGS = 16  # keys of one whole-series request


def series_route() -> str:
    """The whole-series route's template (Starlette's), under the server's base URL path."""
    return url_paths.under_base("api", "runs", "{run_id}", "series")


def series_path(run_id: str) -> str:
    """The URL path of run `run_id`'s whole series (the client adds `&tag=KEY`)."""
    return url_paths.under_base("api", "runs", urllib.parse.quote(run_id, safe=""), "series") + "?"


def rows(run_id: str, after: int, tags: list[str]) -> dict[str, Any] | None:
    """The new rows of `tags` in the whole lines after byte `after` of the run's metrics.jsonl, at most MAX_BYTES
    of them (the answer's offset says where the next read starts); None for no such run. The caller bounds
    `tags` (the push stream: push_route's feeds and tags per feed)."""
    folder = run_lookup.run_folder(run_id)
    if folder is None:
        return None
    try:
        size = provider.records_size(folder)
    except OSError:
        size = 0
    if size < after:  # replaced or truncated: the page's next figure starts over
        return {"offset": after, "behind": True}
    records, end = provider.records_after(folder, after, MAX_BYTES)
    wanted = frozenset(tags)
    xs: dict[str, list[int]] = {t: [] for t in wanted}
    ys: dict[str, list[float]] = {t: [] for t in wanted}
    walls: dict[str, list[float | None]] = {t: [] for t in wanted}
    for rec in records:
        step = rec.get("step")
        if not isinstance(step, int):
            continue
        wall = rec.get("wall")
        wall = wall if isinstance(wall, int | float) and math.isfinite(wall) else None
        for tag in wanted.intersection(rec):
            value = rec[tag]
            if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
                xs[tag].append(step)
                ys[tag].append(value)
                walls[tag].append(wall)
    return {"offset": end, "x": xs, "y": ys, "wall": walls}


def whole_series(run_id: str, tags: list[str]) -> dict[str, Any] | None:
    """Each of `tags`' (step, value) pairs as the server holds them (bounded); None for no such run."""
    folder = run_lookup.run_folder(run_id)
    if folder is None:
        return None
    table = provider.scalars(folder)  # bounded columns, from the run's columnar cache where it has one
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
