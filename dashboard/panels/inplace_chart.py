"""A plotly figure that updates in place on Live and Run detail; their line charts are line_chart.py's.

st.plotly_chart gives a chart a new element id whenever its figure changes, and the browser
mounts a chart with a new id from scratch: the old one goes, the new one is drawn anew. While a
run trains that is every refresh, and on a busy machine the page spends its time remounting,
charts blank out, and the others fade while they wait (Streamlit's stale-element fade).

Here a chart is a keyed `st.components.v2` component (its id is its key) whose small JavaScript
module calls `Plotly.react` on the chart it already has: only what changed is redrawn, zoom and
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
It is a file the page loads once, like the bundles: the module here is sent with every chart element on
every rerun, so it stays small. plotly.js took 0.3-0.5 s to draw a comparison of 50 runs in a fresh tab.
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
from dashboard.panels import safe_text
from dashboard.server import url_paths
from dashboard.server.plotly_preload import PLOTLY_DATA, VENDOR, bundle

GRID_STATIC = Path(__file__).resolve().parent / "static"  # line_grid.js: a metric grid drawn by uPlot
CHART_STATIC = GRID_STATIC / "chart"  # the line chart's files; the grid uses its theme, controls and series
GRID_USES = ("theme.js", "controls.js")  # loaded before static/grid_view.js and line_grid.js, in order

# The component's module: load plotly.js once per page (a promise on window), then draw `data.spec`.
CHART_JS = (
    """
const BASIC = new Set(["scatter", "bar", "pie"]);  // the trace types of plotly-basic.min.js
const DRAW_GAP = 8, MAX_GAP_MS = __INPLACE_MAX_GAP_MS__;  // after a draw of T ms, the next waits up to 8 T (at most this)
function load(name, src) {  // once a page: the load the page's HTML started (server/plotly_preload.py), else one now
  const loads = (window.__jaxdashPlotly = window.__jaxdashPlotly || {});
  const add = () => new Promise((ok, fail) => {
    const s = document.createElement("script");
    s.src = src; s.onload = ok; s.onerror = () => fail(new Error("could not load " + src));
    document.head.appendChild(s);
  });
  loads[name] = loads[name] ? loads[name].catch(add) : add();
  return loads[name];
}
function gridOf(fig) {  // a metric grid's description (components/compare_figures.metric_grid), else null
  const meta = (fig.layout || {}).meta;
  return meta && typeof meta === "object" && meta.grid ? meta.grid : null;
}
function script(src) {  // once a page per file, kept in order (shared with line_chart.py's loader)
  const loads = (window.__jaxdashPlotly = window.__jaxdashPlotly || {});
  return (loads[src] = loads[src] || new Promise((ok, fail) => {
    const s = document.createElement("script");
    s.src = src; s.async = false; s.onload = ok; s.onerror = () => fail(new Error("could not load " + src));
    document.head.appendChild(s);
  }));
}
function sheet(href) {  // once a page per style sheet
  const loads = (window.__jaxdashPlotly = window.__jaxdashPlotly || {});
  return (loads[href] = loads[href] || new Promise((ok, fail) => {
    const link = document.createElement("link");
    link.rel = "stylesheet"; link.href = href; link.onload = ok;
    link.onerror = () => fail(new Error("could not load " + href));
    document.head.appendChild(link);
  }));
}
function loadGrid(urls) {  // uPlot, the style sheets, the chart's theme, controls and series, then static/line_grid.js
  const loads = (window.__jaxdashPlotly = window.__jaxdashPlotly || {});
  loads.gridStyle = loads.gridStyle || sheet(urls.uplot_css);
  const code = Promise.all(urls.grid_uses.map(script)).then(() => script(urls.grid));
  return Promise.all([load("uplot", urls.uplot), code, loads.gridStyle, sheet(urls.chart_css)]);
}
export default async function (component) {
  const { data, parentElement } = component, received = performance.now();
  if (data.warmup) return void (await (data.warmup === "grid" ? loadGrid(data) : load("basic", data.basic)));
  let div = parentElement.querySelector(".jaxdash-chart");
  if (!div) {
    div = document.createElement("div");
    div.className = "jaxdash-chart";
    parentElement.appendChild(div);
    // plotly's `responsive` follows the window only: a column that narrows or widens (a run's
    // layout changing as it ends) would leave the chart clipped or short. Follow the div's width.
    let width = 0;
    new ResizeObserver(([entry]) => {
      const w = Math.round(entry.contentRect.width);
      if (w && w !== width && div.__grid) { width = w; div.__grid.resize(); }
      else if (w && w !== width && div._fullLayout) { width = w; Plotly.Plots.resize(div); } else if (w) width = w;
    }).observe(div);
  }
  if (div.__spec === data.spec && div.__config === data.config) return;  // the same figure: nothing to draw
  div.__spec = data.spec; div.__config = data.config;
  const fig = JSON.parse(data.spec);  // once: a comparison's figure is ~1 MB of JSON
  const layout = fig.layout || {}, grid = gridOf(fig);  // a metric grid: drawn by uPlot (line_grid.js)
  const library = grid ? loadGrid(data) : load("basic", data.basic);
  if (!div.style.height) div.style.height = (layout.height || 450) + "px";  // its room
  if (document.hidden) {  // a tab nobody sees draws nothing; the newest figure draws when it is shown
    await (window.__jaxdashShown = window.__jaxdashShown || new Promise((ok) => {
      const shown = () => { if (!document.hidden) { document.removeEventListener("visibilitychange", shown); window.__jaxdashShown = null; ok(); } };
      document.addEventListener("visibilitychange", shown);
    }));
    if (div.__spec !== data.spec) return;  // a newer figure came meanwhile: it draws
  }
  const gap = (div.__nextDraw || 0) - performance.now();
  if (gap > 0) {  // drawn moments ago: the figures that come meanwhile make one draw
    await new Promise((ok) => setTimeout(ok, gap));
    if (div.__spec !== data.spec) return;
  }
  div.style.height = (layout.height || 450) + "px";  // its room in the page, drawn or not yet
  if (data.lazy && !div.__inView) {  // drawn once it is (nearly) in view
    div.__inView = new Promise((ok) => {
      const seen = new IntersectionObserver((entries) => {
        if (entries.some((e) => e.isIntersecting)) { seen.disconnect(); ok(); }
      }, {rootMargin: "200px 0px"});
      seen.observe(div);
    });
  }
  if (div.__inView) await div.__inView;
  if (div.__spec !== data.spec) return;  // a newer figure came while this one waited: it draws
  await library;
  if (div.__spec !== data.spec) return;
  if (!grid && (fig.data || []).some((t) => !BASIC.has(t.type || "scatter"))) await load("full", data.full);
  const t0 = performance.now();
  if (grid) {
    if (div._fullLayout) Plotly.purge(div);  // the same key held a plotly figure
    window.__jaxdashGrid.draw(div, fig, grid);
    div.style.height = "auto";  // the grid's own height (its room was held until it drew)
  } else {
    if (div.__grid) { div.__grid.destroy(); div.replaceChildren(); }  // the same key held a grid
    await Plotly.react(div, fig.data || [], layout, Object.assign({responsive: true}, JSON.parse(data.config)));
  }
  const took = performance.now() - t0;  // a chart spends at most 1/(1 + DRAW_GAP) of the time drawing
  div.__nextDraw = performance.now() + Math.min(MAX_GAP_MS, DRAW_GAP * took);
  div.__timing = {received, drawn: performance.now(), took};  // for probes: ms since the page's navigation
}
"""
).replace("__INPLACE_MAX_GAP_MS__", str(refresh_timings.ms("inplace_max_gap")))


# Basic bundle missing (a trimmed checkout): the full one stands in for it (plotly_preload.bundle).
_BASIC_FILE = bundle()
_basic = components.declare_component("plotly_basic", path=str(_BASIC_FILE.parent))
_full = components.declare_component("plotly_full", path=str(PLOTLY_DATA))
_uplot = components.declare_component("uplot", path=str(VENDOR))
_grid = components.declare_component("line_grid", path=str(GRID_STATIC))
_chart_files = components.declare_component("line_chart_js", path=str(CHART_STATIC))
_chart = st.components.v2.component("jaxdash_inplace_chart", js=CHART_JS, isolate_styles=False)


def register_assets() -> None:
    """Serve plotly.js's bundles from the running server, whatever thread asks (see module doc); no server: nothing."""
    if not runtime.exists():
        return
    registry = runtime.get_instance().component_registry
    for assets in (_basic, _full, _uplot, _grid, _chart_files):
        if registry.get_component_path(assets.name) != assets.abspath:
            registry.register_component(assets)


register_assets()


def _urls() -> dict[str, str]:
    register_assets()  # a dict lookup once registered
    return {
        "basic": url_paths.under_base("component", _basic.name, _BASIC_FILE.name),
        "full": url_paths.under_base("component", _full.name, "plotly.min.js"),
        "uplot": url_paths.under_base("component", _uplot.name, "uPlot.iife.min.js"),
        "uplot_css": url_paths.under_base("component", _uplot.name, "uPlot.min.css"),
        "grid": url_paths.under_base("component", _grid.name, "line_grid.js"),
        "grid_uses": [chart_file(f) for f in GRID_USES]
        + [url_paths.under_base("component", _grid.name, "grid_view.js")],
        "chart_css": chart_file("style.css"),
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
