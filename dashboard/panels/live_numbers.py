"""A running run's numbers, kept current in the browser between its panel's reruns (Live, Run detail).

While one run trains, its curves append the records the tab's push stream brings and the panel
reruns only for a new state or phase, or every few seconds (dashboard/views/live.py). In between, the
stream (dashboard/server/push_route.py) sends the progress line and the tiles' texts (the same texts
the panel draws, from the same functions: panels/run_numbers.py) after the run wrote, at most once per
PUSH_NUMBERS, and static/stream/numbers.js writes them into the panel's own progress bar and metric
tiles. A run that writes nothing costs no event and no draw; a tile the panel does not show yet
(test/acc after the first evaluation) reruns the panel.
"""

from __future__ import annotations

import streamlit as st

from dashboard import refresh_timings
from dashboard.panels import panels, stream_assets
from dashboard.server import push_route

_numbers = st.components.v2.component("jaxdash_live_numbers", js=stream_assets.FOLLOWER, isolate_styles=False)


def follow(
    run_id: str, panel_key: str = panels.LIVE_PANEL_KEY, tiles: bool = True, on: bool = True, keys: int | None = None
) -> None:
    """Keep the progress bar and tiles of the panel this is placed in current (see module doc).

    panel_key: the key of the st.container that holds the panel (its CSS class is st-key-<key>).
    tiles: the panel shows the metric tiles (a new one reruns it); False: the progress line only.
    on: False once the run ended; placed all the same, so that what is below it does not move.
    keys: how many keys the panel charts (a run with more reruns it: a chart per key); None: not followed.
    """
    data = {
        **stream_assets.scripts(["numbers.js"], "__jaxdashNumbers"),
        "key": f"{panel_key}_numbers",
        "stream_url": push_route.route(),
        "reopen_ms": refresh_timings.ms("push_reopen"),
        "run_id": run_id,
        "panel_class": f"st-key-{panel_key}",
        "tiles": tiles,
        "keys": keys,
        "on": on,
    }
    _numbers(key=f"{panel_key}_numbers", data=data, on_changed_change=lambda: None)  # a new tile: rerun the panel
