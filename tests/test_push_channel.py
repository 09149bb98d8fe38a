"""One push stream per tab (dashboard/server/push_route.py): records reach the chart over it alone.

Against the session's real server: the stream sends a feed's rows in the bytes after its cursor not sent yet
(two appends, two events, no row twice); a foreign Host or Origin is refused as on every route. In Chromium:
a record appended to the followed run reaches the Live chart with no HTTP request but the stream's and no
rerun; a hidden tab's stream is closed, its chart draws nothing, and catches up once the tab is shown.
"""

from __future__ import annotations

import http.client
import json
import time
import urllib.parse
from pathlib import Path
from typing import Any

import pytest

from benchmarks.dashboard_latency import WATCH_JS, fake_running_run
from dashboard.server.serve import Server
from runstore.run_folder import RunFolder
from tests.test_live_refresh import open_counting, wait_quiet


def _port(srv: Server) -> int:
    return int(srv.url.rsplit(":", 1)[1])


def _open(srv: Server, query: dict, headers: dict | None = None) -> http.client.HTTPResponse:
    conn = http.client.HTTPConnection("127.0.0.1", _port(srv), timeout=10)
    conn.request("GET", "/api/stream?q=" + urllib.parse.quote(json.dumps(query)), headers=headers or {})
    return conn.getresponse()


def _next_event(resp: http.client.HTTPResponse, name: str) -> dict:
    """The data of the stream's next `name` event (others skipped); the socket's timeout bounds the wait."""
    event = None
    while True:
        line = resp.fp.readline().decode().strip()
        if line.startswith("event: "):
            event = line[7:]
        elif line.startswith("data: ") and event == name:
            return json.loads(line[6:])


def _append(run: Path, step: int) -> None:
    RunFolder(run).append_records(
        [{"step": step, "wall": float(step), "ts": time.time(), "train/loss": 1 / (step + 1)}]
    )


def test_the_stream_sends_only_bytes_not_yet_sent(server: tuple[Server, Path]) -> None:
    srv, runs = server
    run = fake_running_run(runs)  # step 0
    size = RunFolder(run).records_size()
    resp = _open(srv, {"f": {"a": [run.name, size, ["train/loss"]]}})
    assert resp.status == 200 and resp.getheader("content-type").startswith("text/event-stream")
    _append(run, 1)
    first = _next_event(resp, "rows")
    _append(run, 2)
    second = _next_event(resp, "rows")
    assert list(first) == list(second) == ["a"]
    first, second = first["a"], second["a"]
    assert first["x"] == {"train/loss": [1]} and second["x"] == {"train/loss": [2]}, (first, second)
    assert size < first["offset"] < second["offset"] == RunFolder(run).records_size()
    assert second["y"]["train/loss"] == [1 / 3] and second["wall"]["train/loss"] == [2.0]
    resp.close()


def test_a_foreign_host_or_origin_is_refused_and_a_bad_query_named(server: tuple[Server, Path]) -> None:
    srv, runs = server
    run = fake_running_run(runs)
    query = {"s": {"p": [run.name]}, "f": {"a": [run.name, 0, ["train/loss"]]}}
    port = _port(srv)
    for headers in (
        {"Host": f"rebind.attacker.example:{port}"},
        {"Origin": f"http://rebind.attacker.example:{port}"},
        {"Origin": "null"},
        {"Host": f"127.0.0.1:{port + 1}"},
    ):
        resp = _open(srv, query, headers)
        assert resp.status == 403, headers
        assert b"Refused" in resp.read()
    ours = _open(srv, query, {"Origin": f"http://127.0.0.1:{port}"})
    assert ours.status == 200
    ours.close()
    bad = _open(srv, {"f": {"a": [run.name, -1, ["train/loss"]]}})
    assert bad.status == 400 and b"q.f.a: [run id, byte offset" in bad.read()
    for gaps in ({"p": -1}, {"p": 1.5}, {"p": True}, [1000]):
        bad = _open(srv, {"s": {"p": [run.name]}, "g": gaps})
        assert bad.status == 400 and b"q.g: {key: milliseconds}" in bad.read(), gaps


# The page's HTTP requests from now on (Playwright sees every one, the stream's and fetches' alike).
def _count_requests(page: Any) -> list[str]:
    asked: list[str] = []
    page.on("request", lambda r: asked.append(r.url))
    return asked


def _open_live(tab: Any, srv: Server, run: Path) -> Any:
    page = open_counting(tab, f"{srv.url}/live?run={run.name}")
    page.evaluate(WATCH_JS)
    page.wait_for_function("0 in window.__seen", timeout=60_000, polling=50)
    page.wait_for_function("window.__jaxdashStream && window.__jaxdashStream.opened > 0", timeout=30_000)
    return page


@pytest.mark.browser
def test_a_record_reaches_the_chart_over_the_stream_alone_without_a_rerun(
    server: tuple[Server, Path], tab: Any
) -> None:
    srv, runs = server
    run = fake_running_run(runs)
    page = _open_live(tab, srv, run)
    quiet = wait_quiet(page)
    asked = _count_requests(page)
    for step in (1, 2):
        t_write = time.monotonic()
        _append(run, step)
        page.wait_for_function(f"{step} in window.__seen", timeout=10_000, polling=20)
        assert time.monotonic() - t_write < 2.0, f"step {step} took {time.monotonic() - t_write:.1f} s"
    assert asked == [], f"requests besides the open stream: {asked}"
    assert page.evaluate("window.__wsIn") == quiet, "a record reran the page"


HIDE_JS = """(hidden) => {
  Object.defineProperty(document, "hidden", {get: () => hidden, configurable: true});
  document.dispatchEvent(new Event("visibilitychange"));
}"""


@pytest.mark.browser
def test_a_hidden_tab_receives_and_draws_nothing_until_shown_then_catches_up(
    server: tuple[Server, Path], tab: Any
) -> None:
    srv, runs = server
    run = fake_running_run(runs)
    page = _open_live(tab, srv, run)
    wait_quiet(page)
    page.evaluate(HIDE_JS, True)
    received = page.evaluate("window.__jaxdashStream.received")
    opened = page.evaluate("window.__jaxdashStream.opened")
    probe = _open(srv, {"f": {"a": [run.name, RunFolder(run).records_size(), ["train/loss"]]}})  # an open stream
    for step in (1, 2):
        _append(run, step)
    pushed: list[int] = []
    while len(pushed) < 2:  # one event or two; the probe's socket timeout bounds each wait
        pushed += _next_event(probe, "rows")["a"]["x"]["train/loss"]
    probe.close()
    assert pushed == [1, 2], pushed  # the server pushed both records to the streams open now
    page.wait_for_timeout(1500)  # six of the watcher's ticks more: a stream still open would have brought them
    assert page.evaluate("window.__jaxdashStream.received") == received, "a hidden tab received events"
    assert page.evaluate("1 in window.__seen || 2 in window.__seen") is False, "a hidden tab drew"
    page.evaluate(HIDE_JS, False)
    page.wait_for_function("1 in window.__seen && 2 in window.__seen", timeout=5_000, polling=20)
    assert page.evaluate("window.__jaxdashStream.opened") > opened  # a new stream, from the cursors
