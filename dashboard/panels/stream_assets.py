"""The browser side of the tab's push stream: static/stream/*.js, served once per page, and the tiny loader
its components send (dashboard/panels/refresh_trigger.py, live_numbers.py; the charts load stream.js with
their own files, line_chart.py).

stream.js holds the tab's one stream (dashboard/server/push_route.py); trigger.js and numbers.js follow it.
`loader(files, name)` is a component's whole module: it loads stream.js and `files` once a page (a script
tag each, shared by every component on window) and hands the component to window[name].mount.
"""

from __future__ import annotations

import json
from pathlib import Path

import streamlit.components.v1 as components
from streamlit import runtime

from dashboard.server import url_paths

STREAM_STATIC = Path(__file__).resolve().parent / "static" / "stream"
_files = components.declare_component("push_stream_js", path=str(STREAM_STATIC))


def register_assets() -> None:
    """Serve the stream's files from the running server, whatever thread asks (line_chart.register_assets)."""
    if not runtime.exists():
        return
    registry = runtime.get_instance().component_registry
    if registry.get_component_path(_files.name) != _files.abspath:
        registry.register_component(_files)


register_assets()


def url(name: str) -> str:
    """Where the browser loads static/stream/`name`."""
    register_assets()
    return url_paths.under_base("component", _files.name, name)


def loader(files: list[str], name: str) -> str:
    """A component's module: load stream.js and `files` (names under static/stream/) once, then window[name].mount."""
    urls = json.dumps([url("stream.js"), *(url(f) for f in files)])
    return """
function load(src) {
  const all = (window.__jaxdashScripts = window.__jaxdashScripts || {});
  return (all[src] = all[src] || new Promise((ok, fail) => {
    const el = document.createElement("script");
    el.src = src; el.async = false; el.onload = ok; el.onerror = () => fail(new Error("could not load " + src));
    document.head.appendChild(el);
  }));
}
export default function (component) {
  let stop = null, gone = false;
  Promise.all(__URLS__.map(load)).then(() => { if (!gone) stop = window.__NAME__.mount(component); });
  return () => { gone = true; if (stop) stop(); };
}
""".replace("__URLS__", urls).replace("__NAME__", name)
