"""Every page follows the list of runs: a run that appeared, started, ended or was deleted reruns the page."""

from __future__ import annotations

import streamlit as st

from dashboard import refresh_timings
from dashboard.panels import refresh_trigger
from dashboard.reading import provider, run_list
from dashboard.server import changes_route

WATCH_S = refresh_timings.seconds("runs_watch")


def check_runs() -> None:
    """Rerun the whole page when the list of runs changed since this page's run noted it (watch_runs).

    runstore/run_watch.py keeps the signature current (run folders and whether each is active; a
    background thread), so this is a comparison. starting -> running is no change: the pages' own
    refresh draws it.
    """
    if provider.runs_signature(provider.runs_root()) != st.session_state.get("_runs_seen"):
        st.rerun(scope="app")


def watch_runs() -> None:
    """Rerun the whole page when the list of runs changed, whoever changed it (a CLI run, another tab).

    Call once per full page run, first: it notes the runs as this run saw them, and a fragment that
    draws nothing runs check_runs. Every list of runs (pickers, tables, "Training now") and every
    page's refresh then follow a run that appeared, started, ended or was deleted. Served with the
    change route (dashboard/server/changes_route.py), the tab's push stream brings the list's signature
    when it changed and the fragment reruns only then: a page left open costs no reruns. Without it (AppTest, plain
    app.py), the fragment reruns every WATCH_S.
    """
    st.session_state["_runs_seen"] = seen = provider.runs_signature(provider.runs_root())
    run_list.prefetch()  # a big root's list of runs made in the background from the server's first page
    if changes_route.ROUTE_ON:

        def check_on_change() -> None:
            gap_ms = int(WATCH_S * 1000)  # a page's own panel follows its runs; the list can wait a second
            refresh_trigger.rerun_on_change([], key="runs_watch", gap_ms=gap_ms, listing=seen)
            check_runs()

        st.fragment(check_on_change)()
    else:
        st.fragment(check_runs, run_every=WATCH_S)()
