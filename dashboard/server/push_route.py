"""One push stream per browser tab: server-sent events of what the tab follows, as it happens.

GET <base>/api/stream?q={"s": {KEY: [run id, ...]}, "g": {KEY: MS}, "f": {FEED: [run id, OFFSET, [tag, ...]]},
                         "n": {KEY: run id}}

opens a `text/event-stream` response that stays open. The tab's stream client
(dashboard/panels/static/stream/stream.js) names in it every refresh trigger's runs (s) and its stream gap in
milliseconds, the least time its page waits between two reruns for records alone (g, optional), every chart's
feed with its cursor, a byte offset into the run's metrics.jsonl (f), and the runs whose live numbers it shows
(n). The server's one watcher thread (push_watch.py) then sends

- `event: sig`, data {KEY: "EVENTS.STREAMS"}: the change signature of a trigger's runs (changes_route), at
  once and whenever its EVENTS part changes; a change of records alone (STREAMS) at most
  push_watch.SIG_SHARE times per the key's gap. The page reruns its panel for a new run, state or key, and
  for records alone only after its stream gap where its charts are fed;
- `event: rows`, data {FEED: {"offset": END, "x": ..., "y": ..., "wall": ...}, ...}: each feed's rows in the
  bytes after its cursor not sent yet (rows_route.rows' format), its cursor moved to END; every feed of a tick
  in one event;
- `event: numbers`, data {KEY: {text, fraction, tiles, keys}}: a run's progress line and tiles, at most once
  per PUSH_NUMBERS, only after the run wrote;
- `: keep-alive` every PUSH_KEEPALIVE while nothing else went.

A hidden tab closes its stream and opens a new one with its cursors when shown. The route sits behind the
host check (server/host_check.py) as every route does: a foreign Host or Origin gets 403.
"""

from __future__ import annotations

import asyncio
import json
import signal
from collections.abc import AsyncIterator
from typing import Any

from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response, StreamingResponse

from dashboard import refresh_timings
from dashboard.server import changes_route, push_watch, url_paths

MAX_QUERY = 16_384  # characters of `q`: a Run detail page's every chart fits
MAX_KEYS = 8  # triggers and numbers together
MAX_FEEDS = 128
MAX_TAGS = 16
MAX_OFFSET = 10**18
MAX_GAP_MS = 3_600_000
KEEPALIVE_S = refresh_timings.seconds("push_keepalive")
EXIT_CHECK_S = refresh_timings.seconds("push_exit_check")


class BadStream(ValueError):
    """A query that is not the stream's shape; its message names the part and the fix."""


def route() -> str:
    """The route, under the server's base URL path."""
    return url_paths.under_base("api", "stream")


def _ids(value: Any, where: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(i, str) for i in value):
        raise BadStream(f"{where}: a list of run ids (strings)")
    return value[: changes_route.MAX_IDS]


def _feed(value: Any, where: str) -> push_watch.Feed:
    ok = isinstance(value, list) and len(value) == 3 and isinstance(value[0], str)
    ok = ok and isinstance(value[1], int) and not isinstance(value[1], bool) and 0 <= value[1] <= MAX_OFFSET
    if not (ok and isinstance(value[2], list) and all(isinstance(t, str) for t in value[2])):
        raise BadStream(f"{where}: [run id, byte offset (a whole number >= 0), [tag, ...]]")
    return push_watch.Feed(value[0], value[1], value[2][:MAX_TAGS])


def _doc(text: str) -> dict[str, Any]:
    if len(text) > MAX_QUERY:
        raise BadStream(f"q: at most {MAX_QUERY} characters")
    try:
        doc = json.loads(text or "{}")
        json.dumps(doc, ensure_ascii=False).encode("utf-8")  # "\ud800" is valid JSON but no text
    except json.JSONDecodeError as exc:
        raise BadStream(f'q: JSON, e.g. {{"s": {{"panel": ["RUN_ID"]}}}} ({exc.msg})') from None
    except RecursionError:
        raise BadStream('q: nested too deep; the stream\'s query is {"s": {...}, "f": {...}, "n": {...}}') from None
    except UnicodeEncodeError:
        raise BadStream("q: a string holds a lone surrogate (\\ud800-\\udfff); run ids and keys are text") from None
    except ValueError:  # a number of thousands of digits (Python's int limit)
        raise BadStream(f"q: numbers are byte offsets of at most {len(str(MAX_OFFSET))} digits") from None
    if not isinstance(doc, dict):
        raise BadStream('q: a JSON object {"s": {...}, "g": {...}, "f": {...}, "n": {...}}')
    return doc


def _gaps(value: Any) -> dict[str, float]:
    """{key: seconds} of the query's "g" (each trigger's stream gap, in milliseconds there)."""
    whole = isinstance(value, dict) and all(isinstance(v, int) and not isinstance(v, bool) for v in value.values())
    if not whole or len(value) > MAX_KEYS or not all(0 <= v <= MAX_GAP_MS for v in value.values()):
        raise BadStream(f"q.g: {{key: milliseconds}}, whole numbers from 0 to {MAX_GAP_MS}, at most {MAX_KEYS} keys")
    return {str(k): v / 1000 for k, v in value.items()}


def parse(text: str) -> tuple[dict[str, list[str]], dict[str, float], dict[str, push_watch.Feed], dict[str, str]]:
    """(triggers {key: run ids}, their stream gaps {key: seconds}, feeds {id: Feed}, numbers {key: run id}) of the
    query `text`.

    Raises:
      BadStream: not JSON, too long, or not the shape in the module doc.
    """
    doc = _doc(text)
    sigs, feeds, nums = doc.get("s", {}), doc.get("f", {}), doc.get("n", {})
    if not all(isinstance(x, dict) for x in (sigs, feeds, nums)) or len(sigs) + len(nums) > MAX_KEYS:
        raise BadStream(f"q: s, f and n are objects; s and n have at most {MAX_KEYS} keys together")
    gaps = _gaps(doc.get("g", {}))
    if len(feeds) > MAX_FEEDS:
        raise BadStream(f"q.f: at most {MAX_FEEDS} feeds")
    for key, run in nums.items():
        if not isinstance(run, str):
            raise BadStream(f"q.n.{key}: a run id (a string)")
    return (
        {str(k): _ids(v, f"q.s.{k}") for k, v in sigs.items()},
        gaps,
        {str(k): _feed(v, f"q.f.{k}") for k, v in feeds.items()},
        {str(k): v for k, v in nums.items()},
    )


def server_exiting() -> bool:
    """Whether the server is shutting down (Ctrl+C, SIGTERM). uvicorn's shutdown waits for every open response
    to end, so an open stream would keep the server up for ever: each ends itself once this is True. uvicorn
    answers SIGTERM with its Server's `handle_exit`, whose `should_exit` it sets."""
    server = getattr(signal.getsignal(signal.SIGTERM), "__self__", None)
    return bool(getattr(server, "should_exit", False))


async def _events(stream: push_watch.Stream) -> AsyncIterator[str]:
    """The response's text: each queued event, a keep-alive comment when none came for KEEPALIVE_S; it ends
    when the server shuts down (checked every EXIT_CHECK_S)."""
    push_watch.HUB.add(stream)
    quiet_s = 0.0
    try:
        yield "retry: 1000\n\n"
        while not stream.closed and not server_exiting():
            try:
                text = await asyncio.wait_for(stream.queue.get(), EXIT_CHECK_S)
                quiet_s = 0.0
            except TimeoutError:
                quiet_s += EXIT_CHECK_S
                if quiet_s < KEEPALIVE_S:
                    continue
                text, quiet_s = ": keep-alive\n\n", 0.0
            if text is None:  # the watcher gave up on a client that stopped reading
                return
            yield text
    finally:
        push_watch.HUB.remove(stream)


async def serve(request: Request) -> Response:
    """The stream for the query `q` (module doc); 400 naming the fault for a query of the wrong shape."""
    try:
        sigs, gaps, feeds, nums = parse(request.query_params.get("q", ""))
    except BadStream as exc:
        return PlainTextResponse(str(exc), status_code=400)
    stream = push_watch.Stream(sigs, feeds, nums, asyncio.get_running_loop(), sig_gaps=gaps)
    headers = {"Cache-Control": "no-store", "X-Accel-Buffering": "no"}
    return StreamingResponse(_events(stream), media_type="text/event-stream", headers=headers)
