"""In-app page switches for benchmarks/scale.py: a user moving between the pages of an open dashboard.

A click on a page link reruns the app in the same tab: no reload, so none of the ~1 s a fresh tab
spends starting Streamlit's own JavaScript. Each switch is timed from the click until the new
page's title and its charts (or table) are drawn, counting only elements of the new run: the old
page's are marked stale (data-stale="true") until the new run replaces or removes them.
"""

from __future__ import annotations

import os
import time

import numpy as np
import psutil
from playwright.sync_api import Browser, Page

FRESH = "!el.closest('[data-stale=\"true\"]')"
# Every chart element: plotly graphs, in-place charts and metric grids (.jaxdash-chart), line charts (.jaxdash-line).
CHART_ELEMENTS = ".js-plotly-plot, .jaxdash-chart, .jaxdash-line"
# A chart with points: a plotly graph, a metric grid drawn by uPlot (dashboard/panels/static/line_grid.js: [name,
# points]), or a line chart whose engine drew a point (dashboard/panels/static/chart/engine.js: `__chart.data`).
HAS_POINTS = "(p => (p._fullData || []).some(t => (t._length || (t.x && t.x.length) || 0) > 0)"
HAS_POINTS += " || (p.__drawn || []).some(panel => panel.length)"
HAS_POINTS += " || !!(p.__chart && p.__chart.plot && p.__chart.data.some(t => t.x.length)))"
CHARTS_JS = f"""() => Array.from(document.querySelectorAll('{CHART_ELEMENTS}')).filter(el => {FRESH})
  .filter({HAS_POINTS}).length"""
TABLE_JS = f"() => Array.from(document.querySelectorAll('[data-testid=stDataFrame] canvas')).some(el => {FRESH})"
# [charts in the viewport with points, charts in the viewport], the old page's stale ones left out.
# Run detail draws its all-metrics grids and lower line charts only once they scroll into view (lazy), so an
# undrawn chart is its placeholder (a .jaxdash-chart or .jaxdash-line without points yet).
IN_VIEW_JS = f"""() => {{ const inView = Array.from(document.querySelectorAll('{CHART_ELEMENTS}'))
  .filter(el => {FRESH})
  .filter(d => {{ const r = d.getBoundingClientRect(); return r.height > 0 && r.top < innerHeight && r.bottom > 0; }});
  const drawn = inView.filter({HAS_POINTS});
  return [drawn.length, inView.length]; }}"""
TITLE_JS = f"(t) => Array.from(document.querySelectorAll('h1')).some(el => el.innerText.trim() === t && {FRESH})"


def all_in_view_drawn(page: Page) -> bool:
    """Whether every chart in the viewport (at least one) has points."""
    drawn_, in_view = page.evaluate(IN_VIEW_JS)
    return drawn_ >= 1 and drawn_ == in_view


def drawn(page: Page, title: str, charts: int | None, table: bool) -> bool:
    """Whether the page titled `title` shows `charts` charts with points (None: every chart in the
    viewport; Run detail draws its grids below the fold once they scroll into view), and its table."""
    return (
        page.evaluate(TITLE_JS, title)
        and (all_in_view_drawn(page) if charts is None else page.evaluate(CHARTS_JS) >= charts)
        and (not table or page.evaluate(TABLE_JS))
    )


def switch(page: Page, link: str, charts: int | None, table: bool, timeout_s: float = 60) -> float:
    """Click the page link `link`; seconds until that page is drawn."""
    t0 = time.perf_counter()
    page.get_by_role("link", name=link).click()
    while not drawn(page, link, charts, table):
        if time.perf_counter() - t0 > timeout_s:
            raise TimeoutError(f"{link}: not drawn within {timeout_s:.0f} s")
        time.sleep(0.02)
    return time.perf_counter() - t0


def navigate(browser: Browser, url: str, run: str, compare_ids: str, server: psutil.Process, rounds: int) -> str:
    """`rounds` times: open Live of `run`, then switch to Runs & compare (table), Run detail (charts in view)
    and Live (1 chart); open the comparison of `compare_ids`, switch to Live and back to Runs &
    compare (the selection is kept: table and comparison). One line of medians, and server CPU."""
    times: dict[str, list[float]] = {"Runs & compare": [], "Run detail": [], "Live": [], "compare": []}
    cpu0 = sum(server.cpu_times()[:2])
    for _ in range(rounds):
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(f"{url}/live?run={run}")
        page.wait_for_function(CHARTS_JS, timeout=60_000)
        for link, charts, table in (("Runs & compare", 0, True), ("Run detail", None, False), ("Live", 1, False)):
            times[link].append(switch(page, link, charts, table))
        page.goto(f"{url}/runs?compare={compare_ids}")
        page.wait_for_function(CHARTS_JS, timeout=60_000)
        switch(page, "Live", 1, False)
        times["compare"].append(switch(page, "Runs & compare", 1, True))
        page.close()
    cpu = (sum(server.cpu_times()[:2]) - cpu0) / rounds
    names = {"compare": "back to the comparison"}
    parts = [f"{names.get(k, k)} median {np.median(v):.2f} s (max {max(v):.2f})" for k, v in times.items()]
    return ", ".join(parts) + (f"; server CPU {cpu:.2f} s a round; load average {os.getloadavg()[0]:.1f}")
