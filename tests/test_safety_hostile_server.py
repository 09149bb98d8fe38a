"""A hostile caller and hostile run data against one real server (#36, items 3, 4, 9, 10, 11).

The module's server is started with its own TMPDIR, and its first request is a route's from outside
any page (item 3: that once left every page without plotly.js; it would leave the line charts without
their engine's files alike: every chart file is a component file registered with the running server).
A local HTTP server on another port stands for a remote host: the run data of one run names it in
markdown images (its name, display name, notes, tags, metric names, message) and in a figure's
`layout.images`; no page may make Chromium fetch from it (item 10).
"""

from __future__ import annotations

import http.client
import os
import threading
import time
import urllib.parse
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import plotly.graph_objects as go
import pytest

from benchmarks import browser_probes
from dashboard.processes import notes_sinks
from dashboard.server import stale_temp
from dashboard.server.serve import Server, start_server
from runstore import media_store, run_folder, run_store
from runstore.run_folder import RunFolder
from tests.test_safety_damaged import GOOD_CFG, good_run

IDLE_JS = "() => !document.querySelector('[data-testid=stStatusWidget]')"  # no script run under way
CHART = ".jaxdash-chart .main-svg"  # a chart plotly.js drew (a logged figure: the hostile run's)
# The good run's train/loss drawn by the line chart engine (static/chart/, uPlot): its 3 points.
LOSS_DRAWN = f"{browser_probes.SERIES_JS}.some((t) => t.name === 'train/loss' && t.n === 3)"
ASSET = "/component/"  # where the server serves every chart file: plotly.js, uPlot, the engine's and the stream's


class _Pixel(BaseHTTPRequestHandler):
    """The "other host": counts every request (and serves a page framing the dashboard at /frame)."""

    hits: list[str] = []
    frame_html = b""

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        if self.path == "/frame":
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.end_headers()
            self.wfile.write(self.frame_html)
            return
        self.hits.append(self.path)
        self.send_response(200)
        self.send_header("Content-Type", "image/png")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@dataclass
class Hostile:
    srv: Server
    root: Path
    tmp: Path  # the server's TMPDIR
    port: int
    pixel: ThreadingHTTPServer
    good: str  # a plain finished run with metrics
    bad: str  # the run whose data names the other host
    first_poll: int  # the status of the server's first request


def _md(url: str, what: str) -> str:
    return f"![{what}]({url}/{what}.png)"


def hostile_run(root: Path, url: str) -> Path:
    """A failed run whose name, display name, notes, tag, metric name, message and figure load `url`'s images."""
    d = run_store.new_run_dir(root, "regression", "hostile")
    RunFolder(d).write_config("regression", GOOD_CFG, name=_md(url, "name"))
    now, metric = time.time(), _md(url, "metric")
    status = RunFolder(d).write_status(state="failed", pid=2**22 + 3, started=now - 10, ended=now, step=3, message=_md(url, "message"),
        final={metric: 3.0},
    )  # fmt: skip
    RunFolder(d).append_records(
        [{"step": i, "wall": i * 0.1, "train/loss": 1 / i, metric: float(i)} for i in (1, 2, 3)]
    )
    notes_sinks.save(d, _md(url, "display"), [_md(url, "t")], _md(url, "notes"), status)
    fig = go.Figure(go.Scatter(x=[0, 1], y=[1, 0]), layout={"title": {"text": _md(url, "title")}})
    fig.update_layout(images=[{"source": f"{url}/layout.png", "x": 0, "y": 1, "sizex": 1, "sizey": 1}])
    folder = d / run_folder.ARTIFACTS / run_folder.FIGURES / media_store.tag_file("fig")
    folder.mkdir(parents=True)
    run_store.atomic_write_json(folder / "1.json", {"tag": "fig", "step": 1, "figure": fig.to_plotly_json()})
    return d


def _fake_chart_folder(folder: Path, files: Iterable[str], made: float) -> None:
    folder.mkdir()
    for name in files:
        (folder / name).write_text("x")
    os.utime(folder, (made, made))


def _get(port: int, path: str, host: str | None = None) -> http.client.HTTPResponse:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("GET", path, headers={"Host": host or f"127.0.0.1:{port}"})
    response = conn.getresponse()
    response.read()
    return response


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hostile]:
    base = tmp_path_factory.mktemp("hostile")
    root, tmp = base / "runs", base / "tmp"
    root.mkdir()
    tmp.mkdir()
    pixel = ThreadingHTTPServer(("127.0.0.1", 0), _Pixel)
    threading.Thread(target=pixel.serve_forever, daemon=True).start()
    for name, files in (("dead", stale_temp.FILES), ("other", ("notes.txt",))):  # a dead server's leftover, not ours
        _fake_chart_folder(tmp / f"jaxdash-chart-{name}", files, made=946_684_800.0)  # 2000-01-01
    good = good_run(root, "chart-run").name
    bad = hostile_run(root, f"http://127.0.0.1:{pixel.server_port}").name
    env = {"WANDB_MODE": "disabled", "JAXDASH_WARM_WORKER": "0", "TMPDIR": str(tmp)}
    srv = start_server(root, base / "streamlit.log", env=env)
    port = int(srv.url.rsplit(":", 1)[1])
    # Item 3: the first request is a route's from outside any page (a Live tab of a restarted server).
    first = _get(port, f"/api/runs/{good}/series?tag=train%2Floss")
    try:
        yield Hostile(srv, root, tmp, port, pixel, good, bad, first.status)
    finally:
        srv.stop()
        pixel.shutdown()


@pytest.mark.browser
def test_charts_draw_after_a_request_from_outside_a_page(hostile: Hostile, chromium) -> None:  # noqa: ANN001
    assert hostile.first_poll == 200
    browser = chromium.new_context()  # the session's Chromium, a context of this test's own
    try:
        page = browser.new_page()
        missing = []
        page.on("response", lambda r: missing.append(r.url) if r.status >= 400 and ASSET in r.url else None)
        for path in (f"/live?run={hostile.good}", f"/detail?run={hostile.good}"):
            page.goto(hostile.srv.url + path, timeout=30_000)
            page.wait_for_function(LOSS_DRAWN, timeout=30_000, polling=100)  # the engine's files loaded and drew
        page.goto(f"{hostile.srv.url}/detail?run={hostile.bad}", timeout=30_000)
        page.wait_for_selector(CHART, timeout=30_000)  # plotly.js loaded and drew the run's figure
        assert missing == []
    finally:
        browser.close()


def test_every_response_forbids_framing_by_another_site(hostile: Hostile) -> None:
    port, run = hostile.port, hostile.good
    paths = [
        "/",
        "/runs",
        "/_stcore/health",
        "/favicon.png",
        "/component/dashboard.panels.inplace_chart.plotly_basic/plotly-basic.min.js",
        f"/api/runs/{run}/metrics.csv",
        f"/api/runs/{run}/series?tag=train%2Floss",
        "/api/stream?q=%7Bnot%20json",  # 400
        "/api/runs/no-such-run/metrics.csv",  # 404
    ]
    for path in paths:
        response = _get(port, path)
        assert response.status in (200, 400, 404), path
        assert response.getheader("X-Frame-Options") in ("DENY", "SAMEORIGIN"), path
        assert "frame-ancestors 'self'" in (response.getheader("Content-Security-Policy") or ""), path
    refused = _get(port, "/", host=f"rebind.attacker.example:{port}")  # the host check's own 403
    assert refused.status == 403 and refused.getheader("X-Frame-Options") in ("DENY", "SAMEORIGIN")


@pytest.mark.browser
def test_chromium_does_not_draw_the_dashboard_in_another_sites_frame(hostile: Hostile, chromium) -> None:  # noqa: ANN001
    _Pixel.frame_html = f'<iframe id="f" src="{hostile.srv.url}/new" width="800" height="600"></iframe>'.encode()
    browser = chromium.new_context()  # the session's Chromium, a context of this test's own
    try:
        page = browser.new_page()
        blocked = []
        page.on("console", lambda m: blocked.append(m.text) if "frame-ancestors" in m.text else None)
        refused = lambda m: "frame-ancestors" in m.text  # noqa: E731
        with page.expect_console_message(refused, timeout=30_000):  # Chromium refused to draw the frame
            page.goto(f"http://localhost:{hostile.pixel.server_port}/frame", timeout=30_000)
        frame = page.frame_locator("#f")
        assert frame.locator("#root").count() == 0  # no dashboard inside
        assert blocked, "Chromium said nothing about frame-ancestors"
        page.goto(f"{hostile.srv.url}/new", timeout=30_000)
        page.locator("#root").wait_for(state="attached", timeout=30_000)  # our own page still loads
    finally:
        browser.close()


@pytest.mark.parametrize(
    "path",
    [
        pytest.param("/api/stream?q=" + urllib.parse.quote('{"f": {"a": ["r", "²", []]}}'), id="superscript-2"),
        pytest.param(
            "/api/stream?q=" + urllib.parse.quote('{"f": {"a": ["r", ' + "9" * 5000 + ", []]}}"), id="5000-digits"
        ),
        pytest.param("/api/stream?q=" + "%5B" * 5000 + "%5D" * 5000, id="nested-5000"),
        pytest.param(
            "/api/stream?q=" + urllib.parse.quote('{"s": {"p": ' + "[" * 5000 + "]" * 5000 + "}}"), id="nested-ids"
        ),
        pytest.param("/api/stream?q=" + urllib.parse.quote('{"s": {"p": ["\\ud800"]}}'), id="lone-surrogate"),
    ],
)
def test_malformed_queries_get_400_and_one_line_never_a_traceback(hostile: Hostile, path: str) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", hostile.port, timeout=30)
    conn.request("GET", path.format(run=hostile.good), headers={"Host": f"127.0.0.1:{hostile.port}"})
    response = conn.getresponse()
    body = response.read().decode()
    assert response.status == 400, body[:300]
    assert "\n" not in body.strip() and len(body) < 300, body[:300]
    assert "Traceback" not in hostile.srv.log.read_text()


@pytest.mark.browser
def test_run_data_never_makes_chromium_fetch_from_another_host(hostile: Hostile, chromium) -> None:  # noqa: ANN001
    _Pixel.hits.clear()
    browser = chromium.new_context()  # the session's Chromium, a context of this test's own
    try:
        page = browser.new_page()
        tried = []  # an image the CSP blocked: escaping missed it
        page.on("console", lambda m: tried.append(m.text) if "img-src" in m.text else None)
        for path in (f"/live?run={hostile.bad}", f"/detail?run={hostile.bad}", "/runs"):
            page.goto(hostile.srv.url + path, timeout=30_000)
            if path != "/runs":
                page.wait_for_selector(CHART, timeout=30_000)
                page.get_by_text("![message](", exact=False).first.wait_for(timeout=30_000)  # shown as text
            else:  # the runs table (a canvas)
                page.wait_for_selector('[data-testid="stDataFrame"]', timeout=30_000)
            page.wait_for_function(IDLE_JS, timeout=30_000, polling=100)  # the page's run done: all of it shown
            page.wait_for_timeout(1500)  # the page's images, had it any, load meanwhile
        page.goto(f"{hostile.srv.url}/detail?run={hostile.bad}", timeout=30_000)
        for what in ("display", "notes", "metric"):
            page.get_by_text(f"![{what}](", exact=False).first.wait_for(timeout=30_000)
    finally:
        browser.close()
    assert _Pixel.hits == []
    assert tried == []


@pytest.mark.browser
def test_no_temporary_chart_folder_while_serving_or_after_a_stop(hostile: Hostile, chromium) -> None:  # noqa: ANN001
    """Last in the module: it stops the server (SIGTERM, as Server.stop does)."""
    browser = chromium.new_context()  # the session's Chromium, a context of this test's own
    try:
        page = browser.new_page()
        page.goto(f"{hostile.srv.url}/live?run={hostile.good}", timeout=30_000)
        page.wait_for_function(LOSS_DRAWN, timeout=30_000, polling=100)  # the chart modules are imported
        page.goto(f"{hostile.srv.url}/live?run={hostile.bad}", timeout=30_000)
        page.wait_for_selector(CHART, timeout=30_000)  # and serve plotly.js (the run's figure drawn)
    finally:
        browser.close()
    left = [hostile.tmp / "jaxdash-chart-other"]  # the dead server's folder went at start; one not ours stays
    assert sorted(hostile.tmp.glob("jaxdash-chart-*")) == left
    hostile.srv.stop()
    assert hostile.srv.proc.returncode is not None
    assert sorted(hostile.tmp.glob("jaxdash-chart-*")) == left


def test_a_leftover_is_kept_while_a_server_that_may_own_it_runs(tmp_path: Path) -> None:
    now = time.time()
    _fake_chart_folder(tmp_path / "jaxdash-chart-a", ["plotly.min.js", "index.html"], made=now)
    (tmp_path / "jaxdash-chart-link").symlink_to(tmp_path / "jaxdash-chart-a")
    assert stale_temp.leftovers(tmp_path, [now - 60]) == []  # a server started before it: maybe its owner
    assert stale_temp.leftovers(tmp_path, [now + 60]) == [tmp_path / "jaxdash-chart-a"]  # started after: not
    os.utime(tmp_path / "jaxdash-chart-a", (946_684_800.0, 946_684_800.0))  # made before any server here started
    assert stale_temp.remove_leftovers(tmp_path) == 1 and not (tmp_path / "jaxdash-chart-a").exists()
