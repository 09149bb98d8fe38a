"""Every page's refresh timing, in one table and one unit (milliseconds).

A page redraws when its runs change (dashboard/panels/refresh_trigger.py), never on a blind timer:
the server pushes the change signature of the runs a tab shows, new records and live numbers over the
tab's one stream (dashboard/server/push_route.py); the panel reruns at most once per gap, and the
charts and numbers draw what the stream brings themselves. The values below
are the whole policy; modules read them from here (the JS ones are joined into their scripts), so
two timings meant to be equal cannot drift apart. Tests check each rule on a fake clock
(tests/test_refresh_timing.py) and on a real page (tests/test_live_refresh.py).
"""

from __future__ import annotations

TIMINGS_MS: dict[str, int] = {
    # The push stream: one per tab (dashboard/server/push_route.py), one watcher thread per server.
    "push_tick": 250,  # the watcher stats the followed runs' files this often; a record is sent within it
    "push_numbers": 1_000,  # a run's live numbers (step, loss, speed) are sent at most this often
    "push_keepalive": 15_000,  # a comment on a stream that sent nothing for this long
    "push_exit_check": 500,  # an open stream looks this often whether the server is shutting down
    "push_reopen": 1_000,  # a stream the network or server broke is opened again after this
    # Reruns of a page's panel (Streamlit): at most one per gap.
    "live_rerun": 500,  # Live: a new state or phase (also the gap for anything new on Live)
    "live_fed_rerun": 20_000,  # Live, records alone: its charts draw them themselves (static/chart/feed.js)
    "detail_rerun": 1_000,  # Run detail redraws its confusion matrix and images too
    "detail_fed_rerun": 20_000,  # Run detail, records alone
    "detail_output_rerun": 10_000,  # Run detail with its process output open
    "runs_rerun": 2_000,  # Runs: a new run or state shows in the table within this
    "runs_records_rerun": 15_000,  # Runs: records alone (the table's last values)
    "sweep_rerun": 2_000,  # Sweep page while trials run
    "launch_training_now": 1_000,  # New run page's "training now" list
    "runs_watch": 500,  # every page checks the list of runs (new, ended or deleted runs)
    # Drawing (browser): charts redraw at a pace their own cost sets.
    "feed_gap": 750,  # a chart draws new rows at most this often
    "inplace_max_gap": 2_000,  # an in-place chart's redraw waits up to 8x its draw time, at most this
    # Server-side rebuilds.
    "chart_rebuild": 1_000,  # a chart figure is rebuilt at most this often while its run trains
    "grid_rebuild": 30_000,  # a training run's grids (confusion matrix, predictions) are rebuilt this often
    "first_point_wait": 1_500,  # Live waits up to this, in one refresh, for a starting run's first record
    "first_point_poll": 30,  # ... looking this often
}


def ms(name: str) -> int:
    """The timing `name` in milliseconds (KeyError for a name not in the table)."""
    return TIMINGS_MS[name]


def seconds(name: str) -> float:
    """The timing `name` in seconds, for Streamlit's `run_every` and `time` calls."""
    return TIMINGS_MS[name] / 1000
