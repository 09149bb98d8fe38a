"""A plotly chart that updates in place: the Live page's charts.

st.plotly_chart gives a chart a new element id whenever its figure changes, and the browser
mounts a chart with a new id from scratch: the old one goes, the new one is drawn anew. While a
run trains that is every refresh, and on a busy machine the page spends its time remounting,
charts blank out, and the others fade while they wait (Streamlit's stale-element fade).

Here a chart is a keyed custom component (its id stays the same) that receives the figure's JSON
and calls `Plotly.react` on the chart it already has: only what changed is redrawn, zoom and
legend clicks are kept (`uirevision`), and nothing is remounted. The component's files are written
to a private temporary folder at import, with the plotly.js that ships with the plotly package.
"""

from __future__ import annotations

import atexit
import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

import plotly
import plotly.io
import streamlit.components.v1 as components

# The Streamlit component protocol, without its npm library: say "ready", draw each render's figure.
INDEX_HTML = """<!doctype html>
<html><head><meta charset="utf-8">
<style>html, body { margin: 0; padding: 0; overflow: hidden; background: transparent; } #chart { width: 100%; }</style>
<script src="plotly.min.js"></script>
</head><body><div id="chart"></div>
<script>
const div = document.getElementById("chart");
let lastSpec = null, lastConfig = null, height = 0;
function send(type, data) { window.parent.postMessage({isStreamlitMessage: true, type: type, ...data}, "*"); }
window.addEventListener("message", (event) => {
  const msg = event.data;
  if (!msg || msg.type !== "streamlit:render") return;
  const args = msg.args || {};
  if (args.warmup) { send("streamlit:setFrameHeight", {height: 0}); return; }  // plotly.js loaded: done
  if (args.spec === lastSpec && args.config === lastConfig) return;  // the same figure: nothing to do
  lastSpec = args.spec; lastConfig = args.config;
  const fig = JSON.parse(args.spec);
  const config = Object.assign({responsive: true}, JSON.parse(args.config || "{}"));
  Plotly.react(div, fig.data || [], fig.layout || {}, config);
  const h = (fig.layout && fig.layout.height) || 450;
  if (h !== height) { height = h; send("streamlit:setFrameHeight", {height: h}); }
});
send("streamlit:componentReady", {apiVersion: 1});
</script></body></html>
"""


def _component_dir() -> Path:
    """A private folder (mode 0700, removed at exit) with index.html and plotly.min.js."""
    folder = Path(tempfile.mkdtemp(prefix="jaxdash-chart-"))
    atexit.register(shutil.rmtree, folder, True)
    (folder / "index.html").write_text(INDEX_HTML)
    shutil.copyfile(Path(plotly.__file__).parent / "package_data" / "plotly.min.js", folder / "plotly.min.js")
    return folder


_chart = components.declare_component("inplace_plotly_chart", path=str(_component_dir()))


def inplace_chart(fig: Any, key: str, config: dict[str, Any] | None = None) -> None:
    """Draw `fig` (a plotly figure) under `key`; later calls with the same key update it in place."""
    spec = plotly.io.to_json(fig, validate=False)
    _chart(spec=spec, config=json.dumps(config or {}), key=key, default=None)


def warm_up() -> None:
    """An invisible chart frame, so the browser has plotly.js loaded and compiled before the Live page needs it.

    The New run page draws one: the Live page a Start switches to then mounts its charts from
    the browser's caches instead of parsing plotly.js anew while the run's first point waits.
    """
    _chart(warmup=True, key="inplace_chart_warmup", default=None)
