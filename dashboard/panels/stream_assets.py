"""The browser side of the tab's push stream: static/stream/*.js, served once per page, and the tiny loader
its components send (dashboard/panels/refresh_trigger.py, live_numbers.py; the charts load stream.js with
their own files, line_chart.py).

stream.js holds the tab's one stream (dashboard/server/push_route.py); trigger.js and numbers.js follow it.
A follower component is declared with FOLLOWER (static/modules/stream_follower.js) and sends `scripts(files,
name)` in its data: stream.js and `files` load once a page (a script tag each, shared by every component on
window) and the component goes to window[name].mount.
"""

from __future__ import annotations

from pathlib import Path

import streamlit.components.v1 as components
from streamlit import runtime

from dashboard.panels import js_modules
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


FOLLOWER = js_modules.module("stream_follower.js")  # a follower component's module: its scripts, then mount


def scripts(files: list[str], name: str) -> dict[str, object]:
    """A follower component's data for FOLLOWER: load stream.js and `files` (names under static/stream/) once a
    page, then window[`name`].mount(component)."""
    return {"scripts": [url("stream.js"), *(url(f) for f in files)], "mount": name}
