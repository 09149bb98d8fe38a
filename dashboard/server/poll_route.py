"""One request a poll for everything a page follows: its change signatures and its runs' numbers.

A page follows its runs with several pollers: the run watcher (the list of runs, every page), the
panel's refresh trigger (its runs' signature, dashboard/panels/refresh_trigger.py) and, while one
run trains, its progress line and tiles (dashboard/panels/live_numbers.py). Each asked the server
on its own: a Live page made 120 signature polls and 60 numbers requests a minute, and each
request costs the browser on the training machine ~6 ms of CPU. The browser now sends what is due
in one request (the poll hub in refresh_trigger.POLL_HUB_JS):

GET <base>/api/runs/poll?q={"s": {KEY: [run id, ...]}, "n": {KEY: [run id, STREAMS]}}

answers {"s": {KEY: "EVENTS.STREAMS"}, "n": {KEY: NUMBERS}}: each signature as the change route
answers it (changes_route.signature), and for each numbers entry the run's progress line and tile
texts (panels/run_numbers.numbers) with the run's STREAMS hash under "streams", or only {"streams": ...}
when the run wrote nothing since the STREAMS the page sent (its numbers did not change).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response

from dashboard.panels import run_numbers
from dashboard.server import changes_route, run_lookup, url_paths

MAX_QUERY = 16_384  # characters of `q`: 8 keys of 64 run ids each fit
MAX_KEYS = 8


class BadPoll(ValueError):
    """A query that is not the poll's shape; its message names the part and the fix."""


def route() -> str:
    """The route, under the server's base URL path."""
    return url_paths.under_base("api", "runs", "poll")


def _ids(value: Any, where: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(i, str) for i in value):
        raise BadPoll(f"{where}: a list of run ids (strings)")
    return value[: changes_route.MAX_IDS]


def parse(text: str) -> tuple[dict[str, list[str]], dict[str, tuple[str, str]]]:
    """({key: run ids} of the signatures, {key: (run id, streams seen)} of the numbers) from `q`.

    Raises:
      BadPoll: not JSON, too long, or not the shape in the module doc.
    """
    if len(text) > MAX_QUERY:
        raise BadPoll(f"q: at most {MAX_QUERY} characters")
    try:
        doc = json.loads(text or "{}")
    except json.JSONDecodeError as exc:
        raise BadPoll(f'q: JSON, e.g. {{"s": {{"panel": ["RUN_ID"]}}}} ({exc.msg})') from None
    except RecursionError:  # JSON nested thousands deep: the poll's is three levels
        raise BadPoll(
            'q: nested too deep; the poll is {"s": {KEY: [RUN_ID, ...]}, "n": {KEY: [RUN_ID, STREAMS]}}'
        ) from None
    try:  # "\ud800" is valid JSON but no text: it could be neither looked up nor answered
        json.dumps(doc, ensure_ascii=False).encode("utf-8")
    except (UnicodeEncodeError, RecursionError):
        raise BadPoll("q: a string holds a lone surrogate (\\ud800-\\udfff); run ids and keys are text") from None
    if not isinstance(doc, dict):
        raise BadPoll('q: a JSON object {"s": {...}, "n": {...}}')
    sigs, nums = doc.get("s", {}), doc.get("n", {})
    if not isinstance(sigs, dict) or not isinstance(nums, dict) or len(sigs) + len(nums) > MAX_KEYS:
        raise BadPoll(f"q: s and n are objects with at most {MAX_KEYS} keys together")
    signatures = {str(k): _ids(v, f"q.s.{k}") for k, v in sigs.items()}
    numbers = {}
    for key, entry in nums.items():
        if not (isinstance(entry, list) and len(entry) == 2 and all(isinstance(x, str) for x in entry)):
            raise BadPoll(f"q.n.{key}: [run id, streams seen] (two strings)")
        numbers[str(key)] = (entry[0], entry[1])
    return signatures, numbers


def answer(text: str, numbers_of: Callable[[str], dict[str, Any] | None]) -> dict[str, Any]:
    """The poll's answer to query `text` (see module doc); numbers_of(run id): a run's numbers, or None.

    Raises:
      BadPoll: a query of the wrong shape.
    """
    signatures, numbers = parse(text)
    out: dict[str, Any] = {"s": {k: changes_route.signature(ids) for k, ids in signatures.items()}, "n": {}}
    for key, (run_id, seen) in numbers.items():
        streams = changes_route.streams(run_id)
        if streams == seen:
            out["n"][key] = {"streams": streams}  # nothing written since: the page's numbers stand
            continue
        got = numbers_of(run_id)
        out["n"][key] = None if got is None else {**got, "streams": streams}
    return out


def numbers_of(run_id: str) -> dict[str, Any] | None:
    """A run's progress line and tile texts (run_numbers), from the status and metric caches the pages share."""
    # run_metrics' st.cache_resource needs the running server: imported at the first poll
    from dashboard.processes.launch_status import run_status
    from dashboard.reading.run_metrics import metrics

    folder = run_lookup.run_folder(run_id)
    return None if folder is None else run_numbers.numbers(run_status(folder), metrics(folder))


def serve(request: Request) -> Response:
    """The route's answer to `q` (see module doc) as JSON; 400 naming the fault for a query of the wrong shape."""
    try:
        found = answer(request.query_params.get("q", ""), numbers_of)
    except BadPoll as exc:
        return PlainTextResponse(str(exc), status_code=400)
    return JSONResponse(found, headers={"Cache-Control": "no-store"})
