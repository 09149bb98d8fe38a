"""plotly.js asked for by every page's HTML, so a fresh tab loads it beside Streamlit's own JavaScript.

A fresh tab runs Streamlit's JavaScript (~1 s here), then the page's script; only when the first chart
component arrived did it ask for plotly.js (1.2 MB), whose download and evaluation (0.3-1.0 s on a busy
2-core machine) then came last, right before the first draw. Every HTML page this server sends now
carries a small script that starts loading it at once, `async`: it never holds the page up, and by the
time a chart arrives Plotly is there (a comparison of 50 runs in a fresh tab: plotly.js ready at
0.7-0.9 s instead of 1.3-2.0 s, the chart drawn ~0.2 s sooner; benchmarks/scale.py, the note of #37).

The script leaves its promise where the chart component looks for it (`window.__jaxdashPlotly.basic`,
dashboard/panels/inplace_chart.py); if it fails, the component loads plotly.js itself.

GET <base>/_jaxdash/plotly-basic.min.js?v=<plotly's version> serves the bundle (cacheable for a day: a
new tab of the same browser takes it from its cache). Only a request for a page (`Accept: text/html`)
is edited, and it is sent uncompressed (8 KB); scripts and styles keep their compression.
"""

from __future__ import annotations

import json
from collections.abc import Callable, MutableMapping
from pathlib import Path
from typing import Any

import plotly
from starlette.requests import Request
from starlette.responses import FileResponse, Response

from dashboard.server import url_paths

VENDOR = Path(__file__).resolve().parent.parent / "panels" / "vendor"  # plotly-basic.min.js, MIT
PLOTLY_DATA = Path(plotly.__file__).resolve().parent / "package_data"  # plotly.min.js, the full bundle
BASIC_JS = "plotly-basic.min.js"
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
    """The script each page's <head> gets: load plotly.js now, keep the promise for the chart component."""
    src = json.dumps(f"{route()}?v={plotly.__version__}")
    return (
        "<script>(function () { var loads = window.__jaxdashPlotly = window.__jaxdashPlotly || {};"
        " var s = document.createElement('script');"
        " loads.basic = new Promise(function (ok, fail) { s.onload = ok;"
        " s.onerror = function () { fail(new Error('could not load ' + s.src)); }; });"
        " loads.basic.catch(function () {});"  # the chart component loads it again
        f" s.src = {src}; s.async = true; document.head.appendChild(s); }})();</script>"
    ).encode()


def _wants_page(scope: Scope) -> bool:
    accept = dict(scope.get("headers") or []).get(b"accept", b"")
    return scope["type"] == "http" and scope.get("method") == "GET" and b"text/html" in accept


class PlotlyPreload:
    """ASGI middleware: `snippet()` added before `</head>` of every HTML page the app sends."""

    def __init__(self, app: Callable) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Callable, send: Callable) -> None:
        if not _wants_page(scope):
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
