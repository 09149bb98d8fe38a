"""Compare, runs table and run page features in Chromium against a real `streamlit run` server."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest

from dashboard.processes import notes_sinks
from dashboard.server.serve import Server
from runstore.run_folder import RunFolder
from tests.apptest_pages import fake_population, fake_run

pytest.importorskip("playwright.sync_api")
pytestmark = pytest.mark.browser
ARTIFACTS = Path(__file__).resolve().parent.parent / "test-artifacts"
# Names of every line with points, per metric grid on the page (drawn by uPlot: dashboard/panels/static/line_grid.js,
# whose div lists each panel's lines as [name, points]).
GRID_TRACES_JS = (
    "Array.from(document.querySelectorAll('.jaxdash-chart')).filter(d => d.__drawn)"
    ".map(d => d.__drawn.flat().filter(([n, k]) => k > 0).map(([n]) => n))"
)
# Names of every trace or line with points, per chart on the page (plotly graph or metric grid).
TRACES_JS = (
    "Array.from(document.querySelectorAll('.js-plotly-plot, .jaxdash-chart')).map(g => g.__drawn"
    " ? g.__drawn.flat().filter(([n, k]) => k > 0).map(([n]) => n)"
    " : (g._fullData || []).filter(t => t._length > 0).map(t => t.name))"
)
IDLE_JS = "() => !document.querySelector('[data-testid=stStatusWidget]')"  # no script run under way
# Per uPlot panel of the first grid: the labels of its shown lines.
SHOWN_JS = """() => Array.from(document.querySelector('.jaxdash-chart .jaxdash-grid-cells').querySelectorAll('.uplot'))
  .map(el => el.__uplot.series.slice(1).filter(s => s.show).map(s => s.label))"""


def test_compare_grid_band_differs_and_parallel_coordinates(server: tuple[Server, Path], tab: Any) -> None:
    srv, runs = server
    single = fake_run(runs, "regression", "finished", name="single", config={"lr": 0.05})
    pop = fake_population(runs, "regression")
    ids = ",".join([single.name, *(d.name for d in pop)])
    ARTIFACTS.mkdir(exist_ok=True)
    page = tab
    page.set_viewport_size({"width": 1400, "height": 1600})
    page.goto(f"{srv.url}/runs?compare={ids}")
    page.wait_for_function(
        f"(() => {{ const c = {GRID_TRACES_JS}; return c.length >= 1 && c.flat().length >= 21; }})()", timeout=90_000
    )
    assert page.locator(".jaxdash-grid-cells .js-plotly-plot").count() == 0, "the grid is uPlot's canvas, not plotly"
    assert page.get_by_text("What differs").count() == 1
    assert page.locator(".js-plotly-plot .parcoords").count() == 0, "7 runs: drawn when asked"
    page.get_by_text("Parallel coordinates", exact=True).click()
    page.locator(".js-plotly-plot .parcoords").first.wait_for(timeout=30_000)
    page.get_by_text("mean, min-max band").click()
    page.wait_for_function(f"{GRID_TRACES_JS}[0].some(n => n.includes('(mean of 6)'))", timeout=30_000)
    page.screenshot(path=str(ARTIFACTS / "compare.png"), full_page=True)


# The page position of the middle point of line `name` in the first panel: [x, y].
POINT_JS = """(name) => { const el = document.querySelector('.jaxdash-grid-cells .uplot'), u = el.__uplot;
  const i = u.series.findIndex(s => s.label === name), [xs, ys] = u.data[i], k = Math.floor(xs.length / 2);
  const r = u.over.getBoundingClientRect();
  return [r.left + u.valToPos(xs[k], 'x'), r.top + u.valToPos(ys[k], 'y')]; }"""
X_RANGE_JS = "() => { const u = document.querySelector('.jaxdash-grid-cells .uplot').__uplot; return [u.scales.x.min, u.scales.x.max]; }"


def test_compare_grid_hover_legend_and_zoom_kept_across_a_new_figure(server: tuple[Server, Path], tab: Any) -> None:
    """The canvas grid as a user works it: hover names the run, a legend click hides it in every panel, a dragged
    zoom stays when the grid is drawn again (smoothing changed in its controls), and a double click shows every
    point again."""
    srv, runs = server
    a = fake_run(runs, "mnist", "finished", name="alpha", n=300)
    b = fake_run(runs, "mnist", "finished", name="beta", n=40)
    page = tab
    page.set_viewport_size({"width": 1400, "height": 1400})
    page.goto(f"{srv.url}/runs?compare={a.name},{b.name}")
    page.wait_for_function(f"{GRID_TRACES_JS}.flat().length >= 4", timeout=60_000)
    page.locator(".jaxdash-grid-legend span", has_text="alpha").first.click()
    page.wait_for_function(f"({SHOWN_JS})().every(p => !p.includes('alpha') && p.includes('beta'))", timeout=5_000)
    page.mouse.move(*page.evaluate(POINT_JS, "beta"))  # alpha's line, hidden, lies on beta's: beta is hovered
    page.locator(".jaxdash-grid-tip", has_text="beta:").wait_for(timeout=5_000)
    page.locator(".jaxdash-grid-legend span", has_text="alpha").first.click()
    page.wait_for_function(f"({SHOWN_JS})().every(p => p.includes('alpha'))", timeout=5_000)
    full = page.evaluate(X_RANGE_JS)
    box = page.locator(".jaxdash-grid-cells .u-over").first.bounding_box()
    page.mouse.move(box["x"] + box["width"] * 0.2, box["y"] + box["height"] * 0.5)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] * 0.5, box["y"] + box["height"] * 0.52, steps=5)
    page.mouse.up()
    zoomed = page.evaluate(X_RANGE_JS)
    assert full[0] < zoomed[0] < zoomed[1] < full[1], (full, zoomed)
    page.locator(".jaxdash-chart select.jaxdash-smooth").first.select_option("ema")  # drawn anew: raw + smoothed
    page.wait_for_function(f"{GRID_TRACES_JS}[0].length >= 8", timeout=30_000)
    assert page.evaluate(X_RANGE_JS) == pytest.approx(zoomed)
    page.locator(".jaxdash-grid-cells .u-over").first.dblclick()
    assert page.evaluate(X_RANGE_JS) == pytest.approx(full)
    page.evaluate("() => localStorage.clear()")  # the grid's settings are the browser's: none for the next test


def test_compare_grid_draws_a_single_point_and_thirty_decades_on_a_log_axis(
    server: tuple[Server, Path], tab: Any
) -> None:
    """Data uPlot's own ranges and ticks failed on ("Invalid array length"): a line of one point (x range 0) and a
    log axis over 31 decades. Each panel draws, with no page error."""
    srv, runs = server
    rows = {
        "single": [{"step": 5, "ts": 1.0, "train/loss": 0.5}],
        "tiny": [{"step": s, "ts": 1.0, "train/loss": 1e-30 if s < 5 else float(s)} for s in range(30)],
    }
    dirs = []
    for name, records in rows.items():
        dirs.append(fake_run(runs, "regression", "finished", name=name, n=0))
        RunFolder(dirs[-1]).append_records(records)
    page, errors = tab, []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.set_viewport_size({"width": 1400, "height": 1200})
    page.goto(f"{srv.url}/runs?compare={dirs[0].name},{dirs[1].name}")
    page.wait_for_function(f"{GRID_TRACES_JS}.flat().length >= 2", timeout=60_000)
    page.locator(".jaxdash-grid-controls label").filter(has_text="log y").first.click()  # the grid's own control
    page.wait_for_function(
        "() => { const el = document.querySelector('.jaxdash-grid-cells .uplot');"
        " return el && el.__uplot.scales.y.distr === 3; }",
        timeout=30_000,
    )
    assert page.locator(".jaxdash-grid-empty").count() == 0 and not errors, errors
    low, high = page.evaluate("() => { const y = document.querySelector('.jaxdash-grid-cells .uplot').__uplot.scales.y;"
                              " return [y.min, y.max]; }")  # fmt: skip
    assert low <= 1e-30 and high >= 29, (low, high)
    page.evaluate("() => localStorage.clear()")


def test_search_filters_and_notes_survive_a_reload(server: tuple[Server, Path], tab: Any) -> None:
    srv, runs = server
    keep = fake_run(runs, "regression", "finished", name="keep-me")
    fake_run(runs, "mnist", "failed", name="other", message="no data")
    notes_sinks.save(keep, "Kept run", ["winner"], "note text", {})
    page = tab
    page.set_viewport_size({"width": 1400, "height": 1000})
    page.goto(f"{srv.url}/runs")
    search = page.get_by_placeholder("name, settings, notes…")
    search.wait_for(timeout=60_000)
    search.fill("winner")
    search.press("Enter")
    page.get_by_text("1 of 2 runs match.").wait_for(timeout=30_000)
    page.reload()  # notes live in the run folder: a reload shows them
    page.get_by_placeholder("name, settings, notes…").fill("Kept")
    page.get_by_placeholder("name, settings, notes…").press("Enter")
    page.get_by_text("1 of 2 runs match.").wait_for(timeout=30_000)


def test_run_page_shows_its_output_and_system_metrics_while_running(server: tuple[Server, Path], tab: Any) -> None:
    srv, runs = server
    d = fake_run(runs, "regression", "running", pid=os.getpid(), name="sys")
    recs = [{"step": 600 + i, "wall": 60.0 + i, "ts": time.time(), "sys/rss_mb": 512.0 + i} for i in range(3)]
    RunFolder(d).append_records(recs)
    RunFolder(d).log_path.write_text("first line of output\n")
    page = tab
    page.set_viewport_size({"width": 1400, "height": 2000})
    page.goto(f"{srv.url}/detail?run={d.name}")
    page.get_by_text("first line of output").wait_for(timeout=60_000)
    with open(RunFolder(d).log_path, "a") as f:
        f.write("a line written later\n")
    page.get_by_text("a line written later").wait_for(timeout=15_000)  # refreshed, no reload
    page.locator(".jaxdash-chart").last.scroll_into_view_if_needed()  # the grids draw once in view
    page.wait_for_function(
        f"{TRACES_JS}.some(c => c.length > 0) && document.body.innerText.includes('sys/rss_mb')", timeout=30_000
    )
    page.screenshot(path=str(ARTIFACTS / "detail_sys_log.png"), full_page=True)
    RunFolder(d).write_status(state="finished", ended=time.time())


def test_run_detail_draws_its_metric_grids_when_they_scroll_into_view(server: tuple[Server, Path], tab: Any) -> None:
    """Below the run's own panels, the all-metrics grids cost a fresh tab nothing until scrolled to."""
    srv, runs = server
    d = fake_run(runs, "regression", "finished", name="lazy")
    recs = [{"step": 600 + i, "wall": 60.0 + i, "ts": time.time(), "sys/rss_mb": 512.0 + i} for i in range(3)]
    RunFolder(d).append_records(recs)
    # series drawn per chart, in page order: the run's own panels (line charts), then the grids (uPlot)
    points = (
        "Array.from(document.querySelectorAll('.jaxdash-line, .jaxdash-chart')).map(g => g.__chart"
        " ? (g.__chart.plot ? g.__chart.data.length : 0) : (g._fullData || g.__drawn || []).length)"
    )
    page = tab
    page.set_viewport_size({"width": 1400, "height": 700})
    page.goto(f"{srv.url}/detail?run={d.name}")
    page.wait_for_function(f"(() => {{ const c = {points}; return c.length >= 3 && c[0] > 0; }})()", timeout=60_000)
    page.wait_for_function(IDLE_JS, timeout=60_000, polling=100)  # the page's run done: every chart is in it
    page.wait_for_timeout(1000)  # a grid drawn without being seen would be drawn by now
    assert page.evaluate(points)[-1] == 0, "the system grid, a screen below, was drawn without being seen"
    for chart in page.locator(".jaxdash-line, .jaxdash-chart").all():  # the per-key panels, then the grids
        chart.scroll_into_view_if_needed()
    page.wait_for_function(f"{points}.every(n => n > 0)", timeout=15_000)
