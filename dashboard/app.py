"""Entry point: `streamlit run dashboard/app.py`. Declares the pages and the shared frame."""

from __future__ import annotations

import sys
from pathlib import Path

# `streamlit run` puts dashboard/ on sys.path, not the repository root that holds the packages.
ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import streamlit as st  # noqa: E402

PAGES_DIR = Path(__file__).parent / "pages"


def run() -> None:
    """Configure the page, declare navigation and run the selected page."""
    st.set_page_config(page_title="JAX training dashboard", page_icon=":material/monitoring:", layout="wide")
    pages = [
        st.Page(PAGES_DIR / "launch.py", title="New run", icon=":material/rocket_launch:", url_path="new", default=True),
        st.Page(PAGES_DIR / "live.py", title="Live", icon=":material/monitoring:", url_path="live"),
        st.Page(PAGES_DIR / "runs.py", title="Runs & compare", icon=":material/table_chart:", url_path="runs"),
        st.Page(PAGES_DIR / "detail.py", title="Run detail", icon=":material/insights:", url_path="detail"),
    ]
    st.navigation(pages, position="top").run()


run()
