"""The app script: declares the pages and the shared frame. Served by dashboard/server_app.py
(`streamlit run dashboard/server_app.py`), which adds the streamed CSV route."""

from __future__ import annotations

import logging
import sqlite3
import sys
from pathlib import Path

# `streamlit run` puts dashboard/ on sys.path, not the repository root that holds the packages.
ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import streamlit as st  # noqa: E402

from dashboard import state  # noqa: E402
from dashboard.panels import panels, safe_text  # noqa: E402
from dashboard.processes import launcher, page_queue, page_tensorboard  # noqa: E402
from dashboard.processes import warm_workers as worker  # noqa: E402
from dashboard.reading import provider, runs_watch  # noqa: E402

# Not "pages/": on a fresh server a deep link would run such a folder's files directly, without this frame.
PAGES_DIR = Path(__file__).parent / "views"


@st.cache_resource(show_spinner=False)
def queue_resumed(root: str) -> bool:
    """Once per server and runs root: start what waits in its run queue (jobs queued before a restart)."""
    if (Path(root) / "queue.db").is_file():
        try:
            page_queue.dispatch(Path(root), launcher.start_now)
        except (OSError, sqlite3.Error) as exc:  # a damaged queue.db must not take the page down
            # One line in the server log (the Sweeps page names it too), never a traceback.
            logging.getLogger(__name__).warning("could not resume the run queue in %s: %s", root, exc)
    return True


def run() -> None:
    """Configure the page, declare navigation and run the selected page."""
    st.set_option("client.showErrorDetails", "none")  # never a traceback in the page
    st.set_option("client.toolbarMode", "minimal")
    st.set_page_config(page_title="JAX training dashboard", page_icon=":material/monitoring:", layout="wide")
    if page_tensorboard.is_shared():
        where = page_tensorboard.server_address() or "every network interface"
        st.warning(
            f"This dashboard is served on **{where}**: anyone who can reach it can start, stop and delete "
            "training runs, that is, run code on this machine. Serve it on 127.0.0.1 (the default of "
            "`./scripts/start.sh`) unless every machine that can reach it is trusted.",
            icon=":material/warning:",
        )
    st.html(panels.LIVE_PANEL_CSS)  # style only: Streamlit adds it without taking room in the page
    worker.warm_up()  # once the page has launched a run: a process with JAX imported, waiting for the next Start
    queue_resumed(str(provider.runs_root()))
    new_run = st.Page(PAGES_DIR / "launch.py", title="New run", icon=":material/rocket_launch:", url_path="new")

    def home() -> None:
        st.switch_page(new_run, query_params=st.query_params.to_dict())  # keeps ?run=

    # The default page always lives at "/" (Streamlit ignores its url_path), so /new would be "not
    # found": "/" is a hidden page that goes to /new, and every page has a link of its own.
    pages = [
        st.Page(home, title="Home", url_path="home", default=True, visibility="hidden"),
        new_run,
        st.Page(PAGES_DIR / "live.py", title="Live", icon=":material/monitoring:", url_path="live"),
        st.Page(PAGES_DIR / "runs.py", title="Runs & compare", icon=":material/table_chart:", url_path="runs"),
        st.Page(PAGES_DIR / "detail.py", title="Run detail", icon=":material/insights:", url_path="detail"),
        st.Page(PAGES_DIR / "sweep.py", title="Sweeps", icon=":material/tune:", url_path="sweeps"),
    ]
    page = st.navigation(pages, position="top")
    st.session_state[state.PAGE_KEY] = page.url_path
    # Every page follows new, ended and deleted runs without a reload. Not New run's way: its
    # watcher fragment rerunning the page while Start switches to Live crashed the page ("Bad
    # delta path index", a blank page in 2 of 3 tries in Chromium); its list refreshes itself.
    try:
        if page.url_path != "new":
            runs_watch.watch_runs()  # first: a page run cut short by a rerun still leaves its watcher
        page.run()
    except Exception as exc:  # noqa: BLE001 - a message in the page, the traceback only in the server log
        logging.getLogger("dashboard").exception("page %s failed", page.title)
        st.error(safe_text.md(f"Something went wrong: {type(exc).__name__}: {exc}"), icon=":material/error:")


run()
