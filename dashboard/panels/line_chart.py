"""The line charts of Live and Run detail: a keyed component whose browser side is static/chart/ (uPlot).

The chart's files (static/stream/stream.js, the tab's push stream; static/chart/: theme.js, controls.js,
series.js, feed.js, engine.js, style.css; uPlot from vendor/) are served once per page through Streamlit's component file route, as inplace_chart serves plotly.js
and line_grid.js; the component's own module (LOADER, sent with every element) only loads them once and hands
the element its spec. Its key is its id, so a rerun with a new spec updates the chart in place (no remount),
and a rerun with the same spec costs the browser nothing. What the chart holds comes from
dashboard/panels/line_spec.py.
"""

from __future__ import annotations

import json
from typing import Any

import streamlit as st

from dashboard.panels import inplace_chart, js_modules, stream_assets

CHART_STATIC = inplace_chart.CHART_STATIC  # static/chart/, served by inplace_chart (the metric grid uses it too)
FILES = ("theme.js", "controls.js", "series.js", "feed.js", "engine.js")  # in this order: each uses the ones before

LOADER = js_modules.module("line_chart.js")  # uPlot and the chart's files once a page, then the element's spec

_chart = st.components.v2.component("jaxdash_line_chart", js=LOADER, isolate_styles=False)


def register_assets() -> None:
    """Serve the chart's files from the running server, whatever thread asks (inplace_chart.register_assets
    registers static/chart/ with the grid's files)."""
    inplace_chart.register_assets()


register_assets()


def urls() -> dict[str, Any]:
    """Where the browser loads uPlot and the chart's files."""
    register_assets()
    uplot = inplace_chart.uplot_urls()
    files = [stream_assets.url("stream.js")] + [inplace_chart.chart_file(f) for f in FILES]
    return {**uplot, "css": inplace_chart.chart_file("style.css"), "files": files}


def draw(spec: dict[str, Any], key: str, text: str | None = None, lazy: bool = False) -> None:
    """Draw the chart `spec` (line_spec.spec) under `key`; a later call with the same key updates it in place.

    text: `json.dumps(spec)` if the caller kept it (a rerun that sends the same spec again). lazy: drawn once
    scrolled near (a panel below the fold costs a fresh tab nothing until then).
    """
    text = text if text is not None else json.dumps(spec, allow_nan=False)
    _chart(key=inplace_chart.component_key(key), data={"spec": text, "lazy": lazy, "urls": urls()})


def warm_up() -> None:
    """Load uPlot and the chart's files into the page ahead of its charts (they then draw at once)."""
    _chart(key="line_chart_warmup", data={"urls": urls()})
