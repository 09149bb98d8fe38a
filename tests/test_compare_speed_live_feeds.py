"""A Live page of many panels: only the charts in sight draw a run's new rows (static/chart/feed.js).

In Chromium against a real server: a running run of 16 keys besides its loss, its Live page scrolled through
(every panel drawn and fed), then back to the top. New records reach the charts in sight; a chart out of
sight draws nothing (it keeps the rows the tab's stream brings), and catches up at once when scrolled back
into sight.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from benchmarks import browser_probes
from benchmarks.dashboard_latency import fake_running_run
from benchmarks.latency_keys import SCROLL_THROUGH_JS, TO_TOP_JS
from dashboard.server.serve import Server
from runstore.run_folder import RunFolder

pytest.importorskip("playwright.sync_api")
KEYS = [f"extra/k{i}" for i in range(16)]
# The steps the chart of series `name` drew ([] while it has no such chart drawn).
STEPS_JS = (
    "(name) => { for (const t of "
    + browser_probes.SERIES_JS
    + ") if (t.name === name) return Array.from(t.x).slice(0, t.n); return []; }"
)
# When the chart of series `name` last drew (performance.now(); null while it has no such chart drawn).
DRAWN_AT_JS = (
    "(name) => { for (const [c, s] of ("
    + browser_probes.CHARTS_JS
    + ")()) if (s && s.some((t) => t.name === name)) return c.__timing.drawn; return null; }"
)


def _write(run: Path, step: int) -> None:
    record = {"step": step, "wall": float(step), "ts": time.time(), "train/loss": 1 / (step + 1)}
    RunFolder(run).append_records([record | {k: step + i for i, k in enumerate(KEYS)}])
    RunFolder(run).write_status(step=step)


def _holds(page: Any, tag: str, step: int, timeout_ms: int = 20_000) -> None:
    page.wait_for_function(f"({STEPS_JS})({tag!r}).includes({step})", timeout=timeout_ms, polling=50)


@pytest.mark.browser
def test_charts_out_of_sight_draw_nothing_and_catch_up_when_scrolled_back(
    server: tuple[Server, Path], tab: Any
) -> None:
    srv, runs = server
    run = fake_running_run(runs)
    _write(run, 1)
    tab.goto(f"{srv.url}/live?run={run.name}")
    _holds(tab, "train/loss", 1, 60_000)
    # every panel's chart element on the page before the scroll, which passes only those there when it starts
    tab.wait_for_function(f"({browser_probes.CHARTS_JS})().length >= {len(KEYS) + 1}", timeout=60_000, polling=100)
    tab.evaluate(SCROLL_THROUGH_JS)  # every panel drawn (and fed), as a user who looked at each
    _holds(tab, KEYS[-1], 1)
    tab.evaluate(TO_TOP_JS)
    tab.wait_for_function("(h) => document.querySelector('.jaxdash-line').getBoundingClientRect().top < h", arg=950)
    far_drawn = tab.evaluate(DRAWN_AT_JS, KEYS[-1])
    loss_drawn = tab.evaluate(DRAWN_AT_JS, "train/loss")
    _write(run, 2)
    _holds(tab, "train/loss", 2)  # the loss chart, in sight, appends the record
    _write(run, 3)  # a full feed cycle later (each chart draws at most once per gap): step 2 reached every chart
    _holds(tab, "train/loss", 3)
    assert tab.evaluate(DRAWN_AT_JS, "train/loss") > loss_drawn
    assert tab.evaluate(DRAWN_AT_JS, KEYS[-1]) == far_drawn, "a chart far out of sight drew the run's rows"
    assert 2 not in tab.evaluate(STEPS_JS, KEYS[-1])
    tab.evaluate(
        f"(name) => {{ for (const [c, s] of ({browser_probes.CHARTS_JS})()) if (s && s[0] && s[0].name === name) c.scrollIntoView(); }}",
        KEYS[-1],
    )
    _holds(tab, KEYS[-1], 3)  # back in sight: what it missed, at once
    RunFolder(run).write_status(state="stopped", ended=time.time())
