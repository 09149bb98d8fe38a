"""The HTML of Live and Run detail starts loading plotly.js (dashboard/server/plotly_preload.py): on a real server
over raw HTTP, and in Chromium, where the chart component then draws with that one load."""

from __future__ import annotations

import html as html_lib
import http.client
import re
from pathlib import Path
from typing import Any

import pytest

from dashboard.server import plotly_preload
from dashboard.server.serve import Server
from tests.test_run_ids_pages import DRAWN
from tests.test_safety_damaged import good_run

PLOTLY_LOADS_JS = "performance.getEntriesByType('resource').map(e => e.name).filter(n => n.includes('plotly'))"


def get(srv: Server, path: str, headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
    port = int(srv.url.rsplit(":", 1)[1])
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("GET", path, headers={"Host": f"127.0.0.1:{port}", **headers})
    response = conn.getresponse()
    return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()


def test_live_and_detail_ask_for_plotly_at_once_and_the_bundle_is_served(served: tuple[Server, Path]) -> None:
    srv, _ = served
    page = {"Accept": "text/html,*/*", "Accept-Encoding": "gzip, br"}
    for path in ("/live", "/detail?run=x"):
        status, headers, body = get(srv, path, page)
        html = body.decode()
        assert status == 200 and "content-encoding" not in headers and int(headers["content-length"]) == len(body)
        assert 0 < html.index("window.__jaxdashPlotly") < html.index("</head>"), path
    for path in ("/runs", "/", "/sweeps"):  # no chart as they open: plotly.js would only compete with their tables
        assert b"__jaxdashPlotly" not in get(srv, path, page)[2], path
    src = html_lib.unescape(re.search(r"<script data-src=\"([^\"]+)\">", html).group(1))
    assert src.startswith(plotly_preload.route() + "?v=")
    status, headers, bundle = get(srv, src, {"Accept": "*/*"})
    assert status == 200 and headers["content-type"].startswith("text/javascript")
    assert "max-age=86400" in headers["cache-control"] and bundle == plotly_preload.bundle().read_bytes()
    script = re.search(r"src=\"\./(static/js/[^\"]+\.js)\"", html).group(1)  # Streamlit's own: not a page
    status, headers, code = get(srv, "/" + script, {"Accept": "*/*"})
    assert status == 200 and b"__jaxdashPlotly" not in code and "javascript" in headers["content-type"]


@pytest.mark.browser
def test_a_fresh_tab_loads_plotly_once_and_its_chart_draws_with_it(served: tuple[Server, Path], tab: Any) -> None:
    srv, root = served
    run = good_run(root, "preload")
    page = tab
    page.goto(f"{srv.url}/live?run={run.name}")
    page.wait_for_function(f"({DRAWN})() >= 1", timeout=60_000, polling=100)
    loads = page.evaluate(PLOTLY_LOADS_JS)
    assert len(loads) == 1 and plotly_preload.route() in loads[0], loads  # the page's own load, not a second one
    assert page.locator("[data-testid=stException]").count() == 0
