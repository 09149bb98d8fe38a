"""Rerun a panel when its runs changed, not on a timer.

A timed fragment reruns every LIVE_REFRESH_S whether or not the run wrote anything: each rerun is
server and browser work (the page_cost benchmark measures it) that a run loading data, compiling or
taking slow steps gets nothing from. This component, placed in the panel, follows its runs' change
signature (dashboard/server/changes_route.py) over the tab's one push stream
(dashboard/server/push_route.py: the server sends it at once and whenever it changes) and reruns the
panel when it differs from the one the panel was drawn from (static/stream/trigger.js): a new run,
state, phase or key after GAP_MS since its last rerun, records and progress alone only after the
panel's stream gap (long where its charts and numbers are fed by the stream themselves). A hidden tab
has no stream: it reruns, if anything changed, once shown.
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from dashboard import refresh_timings
from dashboard.panels import stream_assets
from dashboard.server import changes_route, push_route

GAP_MS = refresh_timings.ms("live_rerun")  # at most two reruns a second, as the timer gave

_trigger = st.components.v2.component("jaxdash_refresh_trigger", js=stream_assets.FOLLOWER, isolate_styles=False)


def rerun_on_change(
    run_ids: list[str],
    key: str = "refresh_trigger",
    gap_ms: int = GAP_MS,
    listing: Any = None,
    stream_gap_ms: int | None = None,
    on: bool = True,
) -> None:
    """Rerun the fragment this is called in when one of `run_ids` (or the list of runs) changes.

    Call it first in the fragment: the signature it sends is taken before the panel reads the runs,
    so a change while the panel is drawn reruns it once more. gap_ms: the least time between two
    reruns. stream_gap_ms: the least time between two reruns for records and progress alone (a
    changed state or phase reruns after gap_ms); gap_ms if not given.
    on: False places the element without following (a panel whose run ended keeps its layout).
    listing: the list of runs as the page saw it (runs_watch.watch_runs), if not the current one.
    """
    data = {
        **stream_assets.scripts(["trigger.js"], "__jaxdashTrigger"),
        "key": key,
        "stream_url": push_route.route(),
        "reopen_ms": refresh_timings.ms("push_reopen"),
        "ids": run_ids[: changes_route.MAX_IDS],
        "seen": changes_route.signature(run_ids, listing),
        "gap_ms": gap_ms,
        "stream_gap_ms": max(gap_ms, stream_gap_ms or 0),
        "on": on,
    }
    _trigger(key=key, data=data, on_changed_change=lambda: None)


def follow(runs: list[Any], every_s: float) -> tuple[float | None, list[str] | None]:
    """How a fragment follows the active `runs`: (its timer, the run ids it follows with rerun_on_change).

    Pushed, with no timer, where the stream answers for every one of them; a timer of
    `every_s` otherwise (AppTest, a TensorBoard logdir's mirrored runs); neither without runs.
    """
    if not runs:
        return None, None
    if changes_route.watchable(runs):
        return None, [r.run_id for r in runs]
    return every_s, None
