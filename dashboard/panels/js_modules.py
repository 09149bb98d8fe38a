"""The browser code each of the page's Streamlit components is declared with, read from its own file.

A component's module (what `st.components.v2.component(js=...)` sends with every element) lives in
static/modules/NAME.js, never in a Python string; what differs between its elements (the addresses of the
files it loads, the object it mounts) comes in the element's data, never by substituting text.
"""

from __future__ import annotations

from pathlib import Path

MODULES = Path(__file__).resolve().parent / "static" / "modules"


def module(name: str) -> str:
    """The text of static/modules/`name`."""
    return (MODULES / name).read_text(encoding="utf-8")
