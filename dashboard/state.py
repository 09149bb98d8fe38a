"""The page's session state: which run a page shows and which page it drew last.

Session state only holds the current selection (and, in dashboard/reading, caches); losing it
(reload, second tab) loses nothing, because the next run rebuilds it from the run directories.
Reading runs lives in dashboard/reading (run_list, run_metrics, runs_watch, groups), the state of
a launched run in dashboard/processes/launch_status.py, the page's TensorBoard in
dashboard/processes/page_tensorboard.py.
"""

from __future__ import annotations

import streamlit as st

from dashboard import refresh_timings
from dashboard.panels import safe_text
from dashboard.processes.launch_status import launched_population
from dashboard.reading import provider
from dashboard.reading.run_list import is_active

LIVE_REFRESH_S = refresh_timings.seconds("live_rerun")


PAGE_KEY = "_page"  # session state: the url_path of the page this session's last full run drew


def leave_page(url_path: str) -> None:
    """Note the page a st.switch_page goes to, before calling it (see PAGE_KEY)."""
    st.session_state[PAGE_KEY] = url_path


def select_run(runs: list[provider.RunInfo]) -> provider.RunInfo | None:
    """The run a page shows: ?run=<id>, else the last one chosen here, else the newest active, else the newest.

    The id of a population's launch stands for its first member once the members exist.
    """
    by_id = {r.run_id: r for r in runs}
    asked = st.query_params.get("run")
    for candidate in (asked, st.session_state.get("current_run")):
        if candidate in by_id:
            return by_id[candidate]
        first = launched_population(candidate, runs)
        if first is not None:
            return first
        if candidate and candidate == asked:  # never silently another run
            st.warning(
                f"No run {safe_text.code(candidate)} under {safe_text.code(provider.runs_root())}; showing another run.",
                icon=":material/warning:",
            )
    active = [r for r in runs if is_active(r.status)]
    return (active or runs or [None])[0]


def remember_run(run_id: str) -> None:
    """Make `run_id` the current run for every page (and the URL, so a reload keeps it)."""
    st.session_state["current_run"] = run_id
    st.query_params["run"] = run_id
