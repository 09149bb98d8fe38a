"""plotly.js asked for by the HTML of the pages that open on a chart: a fresh tab loads it beside Streamlit's own.

A fresh tab runs Streamlit's JavaScript (~1 s on a busy 2-core machine), then the page's script; left to the
first chart component, the request for plotly.js (1.2 MB), whose download and evaluation take 0.3-1.0 s there,
would come last, right before the first draw. So the HTML of a page that opens on a chart carries a small
script that starts loading it at once, `async`: it never holds the page up, and by the time a chart arrives
Plotly is there. Live of a 2,000-record run in fresh tabs (benchmarks/scale.py, 5 tabs, two runs each, a
2-core CPU VM): 1.53/1.63 s without the script, 1.42/1.46 s with it; Run detail 1.66/1.88 and 1.55/1.64 s.

The script leaves its promise where the chart component looks for it (`window.__jaxdashPlotly.basic`,
dashboard/panels/inplace_chart.py); if it fails, the component loads plotly.js itself.

GET <base>/_jaxdash/plotly-basic.min.js?v=<plotly's version> serves the bundle (cacheable for a day: a
new tab of the same browser takes it from its cache). Only a browser's request for one of those pages
(`Accept: text/html`) is edited, and it is sent uncompressed (8 KB); nothing else is touched.
"""

from __future__ import annotations

import html
from collections.abc import Callable, MutableMapping
from pathlib import Path
from typing import Any

import plotly
from starlette.requests import Request
from starlette.responses import FileResponse, Response

from dashboard.panels import js_modules
from dashboard.server import url_paths

VENDOR = Path(__file__).resolve().parent.parent / "panels" / "vendor"  # plotly-basic.min.js and uPlot, MIT
PLOTLY_DATA = Path(plotly.__file__).resolve().parent / "package_data"  # plotly.min.js, the full bundle
PRELOAD_JS = js_modules.module("plotly_preload.js")  # the <script> each chart page's <head> gets
BASIC_JS = "plotly-basic.min.js"
# The url paths (dashboard/app.py) of the pages that draw a chart as they open. The Runs page is not one:
# there plotly.js's evaluation competes with the runs table (2,000 runs: 1.51/1.57 s without the script,
# 1.69/1.87 s with it), and a comparison of 50 runs gains nothing (2.07/2.06 vs 2.11/2.31 s; scale.py).
CHART_PAGES = ("live", "detail")
Scope = MutableMapping[str, Any]


def bundle() -> Path:
    """The basic bundle, or the package's full one where a trimmed checkout lacks it."""
    basic = VENDOR / BASIC_JS
    return basic if basic.is_file() else PLOTLY_DATA / "plotly.min.js"


def route() -> str:
    """The route's path, under the server's base URL path."""
    return url_paths.under_base("_jaxdash", BASIC_JS)


def serve(request: Request) -> Response:  # noqa: ARG001 - Starlette passes the request
    """The bundle, cacheable for a day (its URL names plotly's version)."""
    return FileResponse(bundle(), media_type="text/javascript", headers={"Cache-Control": "public, max-age=86400"})


def snippet() -> bytes:
    """The script each page's <head> gets (static/modules/plotly_preload.js, inline): load plotly.js now, keep the
    promise for the chart component. The bundle's address goes in the tag's data-src."""
    src = html.escape(f"{route()}?v={plotly.__version__}", quote=True)
    return f'<script data-src="{src}">{PRELOAD_JS}</script>'.encode()


def _wants_chart_page(scope: Scope) -> bool:
    """A browser asking for the HTML of a page that draws a chart as it opens (CHART_PAGES)."""
    if scope["type"] != "http" or scope.get("method") != "GET":
        return False
    if b"text/html" not in dict(scope.get("headers") or []).get(b"accept", b""):
        return False  # a script, a poll, a row fetch: every request but a page's stops here
    base = url_paths.under_base().rstrip("/")
    return str(scope.get("path", ""))[len(base) :].strip("/") in CHART_PAGES


class PlotlyPreload:
    """ASGI middleware: `snippet()` added before `</head>` of the HTML of CHART_PAGES (`_wants_chart_page`)."""

    def __init__(self, app: Callable) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Callable, send: Callable) -> None:
        if not _wants_chart_page(scope):
            await self.app(scope, receive, send)
            return
        plain = [(k, v) for k, v in scope["headers"] if k.lower() != b"accept-encoding"]  # to edit it
        start: dict[str, Any] = {}
        body = bytearray()

        async def edit(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                content_type = dict(message.get("headers") or []).get(b"content-type", b"")
                if content_type.startswith(b"text/html"):
                    start["message"] = message  # held until the whole body is here
                    return
            if not start or message["type"] != "http.response.body":
                await send(message)
                return
            body.extend(message.get("body", b""))
            if message.get("more_body"):
                return
            html = bytes(body).replace(b"</head>", snippet() + b"</head>", 1)
            headers = [(k, v) for k, v in start["message"].get("headers", []) if k.lower() != b"content-length"]
            await send({**start["message"], "headers": [*headers, (b"content-length", str(len(html)).encode())]})
            await send({"type": "http.response.body", "body": html})

        await self.app({**scope, "headers": plain}, receive, edit)
