"""A plotly figure that updates in place on Live and Run detail; their line charts are line_chart.py's.

st.plotly_chart gives a chart a new element id whenever its figure changes, and the browser
mounts a chart with a new id from scratch: the old one goes, the new one is drawn anew. While a
run trains that is every refresh, and on a busy machine the page spends its time remounting,
charts blank out, and the others fade while they wait (Streamlit's stale-element fade).

Here a chart is a keyed `st.components.v2` component (its id is its key) whose JavaScript
(static/inplace_chart.js, imported once a page by the component's three-line LOADER) calls `Plotly.react`
on the chart it already has: only what changed is redrawn, zoom and
legend clicks are kept (`uirevision`), and nothing is remounted. The component lives in the page
itself, not in a frame, so a chart that appears (the Live page after Start) draws at once with the
plotly.js the page has already loaded, instead of loading a frame and plotly.js first.

That plotly.js is the "basic" bundle (scatter, bar, pie; vendor/plotly-basic.min.js, 1.2 MB, MIT,
the same plotly.js version as the plotly package's), loaded once per page as a script (the HTML of
Live and Run detail starts loading it before Streamlit's own JavaScript runs: server/plotly_preload.py); a figure
with other trace types loads the package's full 4.8 MB bundle first. In Chromium here the basic
bundle loads in 25-230 ms against 80-1,570 ms for the full one. Both are served where they lie
(vendor/ and the plotly package's package_data/, no copy) through Streamlit's component file route:
two v1 components declared only for that. `declare_component` registers a component only inside a
script run, so a module imported first by a server route's worker thread (or at server start) left
them unregistered and every page's charts without plotly.js for the life of the server:
`register_assets` registers them with the running server from any thread, at import and before
every chart.

A metric grid's figure (components/compare_figures.metric_grid: the comparison's and Run detail's small
multiples) is drawn by uPlot on canvas instead (static/line_grid.js: uPlot 1.6.32, 51 KB, MIT, from vendor/).
It is a file the page loads once, with grid_view.js and static/chart/'s theme.js, controls.js and series.js (the
line chart's smoothing, log y and x-axis controls, for a grid whose figure names them), like the bundles: the
LOADER is sent with every chart element on every rerun, so it stays small. plotly.js took 0.3-0.5 s to draw a comparison of 50 runs in a fresh tab.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import plotly.io
import streamlit as st
import streamlit.components.v1 as components
from streamlit import runtime

from dashboard import refresh_timings
from dashboard.panels import js_modules, safe_text
from dashboard.server import url_paths
from dashboard.server.plotly_preload import PLOTLY_DATA, VENDOR, bundle

GRID_STATIC = Path(__file__).resolve().parent / "static"  # line_grid.js: a metric grid drawn by uPlot
CHART_STATIC = GRID_STATIC / "chart"  # the line chart's files; the grid uses its theme, controls and series
GRID_USES = ("theme.js", "controls.js", "series.js")  # loaded before static/grid_view.js and line_grid.js, in order

# The component's whole module: import static/inplace_chart.js (once a page: the browser keeps a module) and draw.
LOADER = js_modules.module("inplace_chart.js")


# Basic bundle missing (a trimmed checkout): the full one stands in for it (plotly_preload.bundle).
_BASIC_FILE = bundle()
_basic = components.declare_component("plotly_basic", path=str(_BASIC_FILE.parent))
_full = components.declare_component("plotly_full", path=str(PLOTLY_DATA))
_uplot = components.declare_component("uplot", path=str(VENDOR))
_grid = components.declare_component("line_grid", path=str(GRID_STATIC))
_chart_files = components.declare_component("line_chart_js", path=str(CHART_STATIC))
_chart = st.components.v2.component("jaxdash_inplace_chart", js=LOADER, isolate_styles=False)


def register_assets() -> None:
    """Serve plotly.js's bundles from the running server, whatever thread asks (see module doc); no server: nothing."""
    if not runtime.exists():
        return
    registry = runtime.get_instance().component_registry
    for assets in (_basic, _full, _uplot, _grid, _chart_files):
        if registry.get_component_path(assets.name) != assets.abspath:
            registry.register_component(assets)


register_assets()


def _urls() -> dict[str, Any]:
    register_assets()  # a dict lookup once registered
    return {
        "basic": url_paths.under_base("component", _basic.name, _BASIC_FILE.name),
        "full": url_paths.under_base("component", _full.name, "plotly.min.js"),
        "uplot": url_paths.under_base("component", _uplot.name, "uPlot.iife.min.js"),
        "uplot_css": url_paths.under_base("component", _uplot.name, "uPlot.min.css"),
        "grid": url_paths.under_base("component", _grid.name, "line_grid.js"),
        "module": url_paths.under_base("component", _grid.name, "inplace_chart.js"),
        "max_gap_ms": refresh_timings.ms("inplace_max_gap"),
        "grid_uses": [chart_file(f) for f in GRID_USES]
        + [url_paths.under_base("component", _grid.name, "grid_view.js")],
        "chart_css": chart_file("style.css"),
        "theme": chart_file("theme.js"),  # a plotly figure's colours follow the page's theme as the line charts'
    }


def chart_file(name: str) -> str:
    """Where the browser loads static/chart/`name` (the line chart's files, line_chart.py; the grid's too)."""
    return url_paths.under_base("component", _chart_files.name, name)


def uplot_urls() -> dict[str, str]:
    """Where the browser loads uPlot and its style sheet (vendor/), for the line charts too (line_chart)."""
    urls = _urls()
    return {"uplot": urls["uplot"], "uplot_css": urls["uplot_css"]}


def figure_spec(fig: Any) -> str:
    """The figure as the JSON the browser draws (built once per figure by callers that redraw it), no remote images."""
    return plotly.io.to_json(safe_text.without_remote_images(fig), validate=False)


def component_key(key: str) -> str:
    """`key` as a key Streamlit's v2 components accept: they refuse `__` (their delimiter), and a run id is data.

    A key without `__` or `%` is kept as it is (no chart remounts); any other has `%` and `_` percent-encoded,
    so `adam__lr1e-3` and `adam_lr1e-3` stay two charts and an encoded key never equals a plain one.
    """
    if "__" not in key and "%" not in key:
        return key
    return key.replace("%", "%25").replace("_", "%5F")


def inplace_chart(
    fig: Any,
    key: str,
    config: dict[str, Any] | None = None,
    lazy: bool = False,
    spec: str | None = None,
) -> None:
    """Draw `fig` (a plotly figure) under `key`; later calls with the same key update it in place.

    lazy: the browser draws it only once it scrolls into view (as W&B
    draws its panels): a chart below the fold costs a fresh tab nothing until the user scrolls.
    spec: `figure_spec(fig)` if the caller kept it (a refresh that sends the same figure again).
    """
    spec = spec if spec is not None else figure_spec(fig)
    key = component_key(key)
    data = {"spec": spec, "config": json.dumps(config or {}), "lazy": lazy}
    _chart(key=key, data={**data, **_urls()})


def warm_up(library: str = "basic") -> None:
    """Load a chart library into the page ahead of time, so the charts that follow draw at once: "basic"
    (plotly.js, for the Live page's charts) or "grid" (uPlot and static/line_grid.js, for a comparison's grids)."""
    _chart(key="inplace_chart_warmup", data={"warmup": library, **_urls()})
