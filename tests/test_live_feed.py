"""A running run's curves, progress line and tiles follow its records in the browser, without reruns.

rows_route.rows answers the records after a byte offset, which the tab's push stream sends
(dashboard/server/push_route.py); the change signature has two parts, so a page whose charts follow
the records reruns at once only for a new state. In Chromium against a real server: records written
one after another reach the chart, the progress line and the tiles while the page's websocket stays
quiet (no rerun).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest

from benchmarks.dashboard_latency import WATCH_JS, fake_running_run
from dashboard.panels.panel_kinds import FED_REBUILD_ROWS, LIVE_POINTS
from dashboard.server import changes_route, rows_route
from dashboard.server.serve import Server
from runstore import run_store
from runstore.run_folder import RunFolder
from settings.config import config_to_dict, parse_config
from tests.test_live_refresh import open_counting, wait_quiet

pytest.importorskip("playwright.sync_api")


def test_the_rows_route_answers_finite_values_after_an_offset_and_never_half_a_line(runs_root: Path) -> None:
    run = fake_running_run(runs_root)  # step 0: train/loss 1.0
    first = rows_route.rows(run.name, 0, ["train/loss", "test/acc"])
    assert first["x"] == {"train/loss": [0], "test/acc": []} and first["y"]["train/loss"] == [1.0]
    RunFolder(run).append_records([{"step": 5, "train/loss": float("nan"), "test/acc": 0.5}])
    with open(RunFolder(run).records_path, "a") as f:
        f.write('{"step": 6, "train/lo')  # a write in progress
    second = rows_route.rows(run.name, first["offset"], ["train/loss", "test/acc"])
    assert second["x"] == {"train/loss": [], "test/acc": [5]}  # NaN left out; the partial line waits
    assert second["offset"] == RunFolder(run).records_path.stat().st_size - len('{"step": 6, "train/lo')
    assert rows_route.rows(run.name, 10**9, ["train/loss"]) == {"offset": 10**9, "behind": True}  # a new file
    assert rows_route.rows("../outside", 0, ["train/loss"]) is None
    assert rows_route.rows(".hidden", 0, ["train/loss"]) is None


def test_a_record_changes_the_streams_part_of_the_signature_and_a_new_state_the_events_part(runs_root: Path) -> None:
    run = fake_running_run(runs_root)
    events, streams = changes_route.signature([run.name]).split(".")
    RunFolder(run).append_records([{"step": 1, "train/loss": 0.5}])
    RunFolder(run).write_status(step=1)
    after_record = changes_route.signature([run.name]).split(".")
    assert after_record[0] == events and after_record[1] != streams
    RunFolder(run).write_status(phase="evaluating")
    assert changes_route.signature([run.name]).split(".")[0] != events


def _write(run: Path, step: int) -> None:
    RunFolder(run).append_records(
        [{"step": step, "wall": float(step), "ts": time.time(), "train/loss": 1 / (step + 1)}]
    )
    RunFolder(run).write_status(step=step)


def _open_live(tab: Any, srv: Server, run: Path, last_step: int = 0) -> Any:
    """`tab` on the run's Live page, its websocket messages counted, its loss chart's `last_step` drawn."""
    page = open_counting(tab, f"{srv.url}/live?run={run.name}")
    page.evaluate(WATCH_JS)
    page.wait_for_function(f"{last_step} in window.__seen", timeout=60_000, polling=50)
    return page


@pytest.mark.browser
def test_records_reach_the_chart_progress_and_tiles_without_a_rerun(server: tuple[Server, Path], tab: Any) -> None:
    srv, runs = server
    run = fake_running_run(runs)
    page = _open_live(tab, srv, run)
    quiet = wait_quiet(page)
    for step in range(1, 7):  # within the panel's 20 s between reruns for records
        _write(run, step)
        time.sleep(0.3)
    page.wait_for_function("6 in window.__seen", timeout=8_000, polling=30)  # appended by the chart itself
    page.get_by_text("step 6/").first.wait_for(timeout=5_000)  # the progress line (numbers: once a second)
    page.get_by_text("0.1429").first.wait_for(timeout=5_000)  # the train/loss tile: 1/7
    assert page.evaluate("window.__wsIn") == quiet, "the panel reran for records its charts and numbers follow"
    RunFolder(run).write_status(state="stopped", ended=time.time())  # a new state reruns at once
    page.get_by_text("Resume").or_(page.get_by_text("stopped")).first.wait_for(timeout=10_000)
    assert page.evaluate("window.__wsIn") > quiet


# When the page's line charts drew: [performance.now(), chart's index among the page's line charts].
DRAW_TIMES_JS = """() => {
  window.__drawAt = [];
  const charts = [...document.querySelectorAll('.jaxdash-line')];
  setInterval(() => charts.forEach((c, i) => {
    const t = (c.__timing || {}).drawn;
    if (t && t !== c.__lastDrawn) { c.__lastDrawn = t; window.__drawAt.push([t, i]); }
  }), 20);
}"""
CHART_TOP_JS = "() => Math.round(document.querySelector('.jaxdash-line').getBoundingClientRect().top + window.scrollY)"


def _longest_draw_gap_s(draws: list[list[float]]) -> float:
    """The longest time between two draws of the same chart, in seconds."""
    gaps = [0.0]
    for chart in {i for _, i in draws}:
        times = [t for t, i in draws if i == chart]
        gaps += [(b - a) / 1000 for a, b in zip(times, times[1:], strict=False)]
    return max(gaps)


@pytest.mark.browser
def test_a_steady_writer_makes_no_request_its_chart_drawn_each_second_and_a_record_after_a_pause_at_once(
    server: tuple[Server, Path], tab: Any
) -> None:
    """A run writing every 0.1 s: the page asks the server nothing (its stream brings every row), its
    chart draws at most every 0.75 s and never falls ~1 s behind; after a pause the next record is drawn
    at once; its end moves nothing on the page."""
    srv, runs = server
    run = fake_running_run(runs)
    page = open_counting(tab, f"{srv.url}/live?run={run.name}")
    page.evaluate(WATCH_JS)
    page.wait_for_function("0 in window.__seen", timeout=60_000, polling=50)
    wait_quiet(page)
    asked: list[str] = []
    page.on("request", lambda r: asked.append(r.url))
    page.evaluate(DRAW_TIMES_JS)
    step, t_end = 0, time.monotonic() + 8
    while time.monotonic() < t_end:
        step += 1
        _write(run, step)
        time.sleep(0.1)
    assert asked == [], f"a steady writer's page made requests: {asked}"
    draws = page.evaluate("window.__drawAt")
    longest = _longest_draw_gap_s(draws)
    # a draw each 0.75 s at the soonest; 2.5 s leaves room for a loaded 2-core machine
    assert len(draws) >= 5 and longest < 2.5, (
        f"a steady writer's chart drew {len(draws)} times, gaps up to {longest:.1f} s"
    )
    time.sleep(2.5)  # the writer pauses
    step += 1
    t_write = time.monotonic()
    _write(run, step)
    page.wait_for_function(f"{step} in window.__seen", timeout=10_000, polling=20)
    assert time.monotonic() - t_write < 2.0, "a record after a pause waited"
    top = page.evaluate(CHART_TOP_JS)
    RunFolder(run).write_status(state="finished", ended=time.time())
    page.get_by_text("finished").first.wait_for(timeout=10_000)
    wait_quiet(page)
    assert page.evaluate(CHART_TOP_JS) == top, "the chart moved when its run ended"


def _run_with_rows(runs: Path, rows: int) -> Path:
    """A fake running run whose train/loss has `rows` records, steps 0 .. rows - 1."""
    run = fake_running_run(runs)
    RunFolder(run).append_records([{"step": s, "ts": time.time(), "train/loss": 1 / (s + 1)} for s in range(1, rows)])
    RunFolder(run).write_status(step=rows - 1)
    return run


def _after_a_rerun(page: Any, run: Path, message: str, start_js: str, count_js: str) -> Any:
    """`count_js` once the rerun a new status message brings (at once) is drawn, and 2 s after the message at
    the soonest; `start_js` run before it."""
    page.evaluate(start_js)
    before = page.evaluate("window.__wsIn")
    RunFolder(run).write_status(message=message)
    written = time.monotonic()
    page.wait_for_function(f"window.__wsIn > {before}", timeout=10_000, polling=50)
    wait_quiet(page)  # the rerun's messages all came and were drawn
    page.wait_for_timeout(max(0.0, 2.0 - (time.monotonic() - written)) * 1000)
    return page.evaluate(count_js)


def _line_js(name: str) -> str:
    """JS for the line chart (static/chart/engine.js, class jaxdash-line) drawing the series `name`: its element,
    whose `__chart` holds what it drew (`data`), its spec (`spec`, a new object for each spec the page sends: a
    chart built anew) and its uPlot (`plot`); each draw stamps `__timing.drawn`."""
    return (
        "[...document.querySelectorAll('.jaxdash-line')]"
        f".find((el) => el.__chart && (el.__chart.data || []).some((t) => t.name === '{name}'))"
    )


LOSS_LINE = _line_js("train/loss")
KEEP_SPEC_JS = f"() => {{ window.__keptSpec = ({LOSS_LINE}).__chart.spec; }}"
SPEC_KEPT_JS = f"() => ({LOSS_LINE}).__chart.spec === window.__keptSpec"
# The loss chart's spec: the cursor its feed starts from, and how many points of train/loss it holds itself.
SPEC_JS = f"""() => {{
  const spec = ({LOSS_LINE}).__chart.spec;
  return {{offset: spec.feed.offset, points: spec.series.find((s) => s.name === 'train/loss').x.length}};
}}"""
LOSS_POINTS_JS = f"() => ({LOSS_LINE}).__chart.data.find((t) => t.name === 'train/loss').x.length"


def _rebuilt_after_a_rerun(page: Any, run: Path, message: str) -> bool:
    """Whether the loss chart got a new spec (was built anew) in the rerun a new status message brings."""
    return not _after_a_rerun(page, run, message, KEEP_SPEC_JS, SPEC_KEPT_JS)


@pytest.mark.browser
def test_a_rerun_keeps_a_fed_chart_figure_until_many_rows_came(server: tuple[Server, Path], tab: Any) -> None:
    """The chart appended the rows itself: a rerun (here for a new status message) sends its spec again
    unchanged, and the browser keeps its chart with the appended points (nothing built anew), until
    panel_kinds.FED_REBUILD_ROWS rows came: then the rerun sends a spec built anew, downsampled, its
    feed's cursor past the rows it holds."""
    srv, runs = server
    run = _run_with_rows(runs, 100)  # a spec of 100 rows: kept until 200 (rows doubled) or 900
    page = _open_live(tab, srv, run, last_step=99)
    wait_quiet(page)
    first = page.evaluate(SPEC_JS)
    assert first["points"] == 100
    for step in range(100, 105):
        _write(run, step)
        time.sleep(0.2)
    page.wait_for_function("104 in window.__seen", timeout=10_000, polling=30)
    rebuilt = _rebuilt_after_a_rerun(page, run, "a new message: the panel reruns at once")
    assert not rebuilt, "a rerun built the fed chart anew for 5 rows it had appended"
    assert page.evaluate(SPEC_JS) == first
    assert page.evaluate(LOSS_POINTS_JS) == 105, "the rerun dropped the points the chart appended"
    rows = [{"step": s, "ts": time.time(), "train/loss": 1 / (s + 1)} for s in range(105, 106 + FED_REBUILD_ROWS)]
    RunFolder(run).append_records(rows)
    page.wait_for_function(f"{105 + FED_REBUILD_ROWS} in window.__seen", timeout=15_000, polling=50)
    page.evaluate(KEEP_SPEC_JS)
    RunFolder(run).write_status(message="another message")
    page.wait_for_function(f"!({SPEC_KEPT_JS})()", timeout=10_000, polling=50)  # built anew
    anew = page.evaluate(SPEC_JS)
    assert anew["offset"] > first["offset"] and anew["points"] <= LIVE_POINTS  # downsampled anew


# A chart or grid drawn since SNAPSHOT_DRAWS_JS: the line charts (engine.js) and the in-place charts (a metric
# grid, drawn by uPlot: dashboard/panels/inplace_chart.py) stamp each draw in their element's `__timing.drawn`.
CHARTS = "[...document.querySelectorAll('.jaxdash-line, .jaxdash-chart')]"
SNAPSHOT_DRAWS_JS = f"() => {{ window.__drawnAt = new Map({CHARTS}.map(d => [d, (d.__timing || {{}}).drawn])); }}"


def _drawn_anew_js(selector: str) -> str:
    """JS: how many elements matching `selector` drew since SNAPSHOT_DRAWS_JS."""
    return (
        f"() => [...document.querySelectorAll('{selector}')]"
        ".filter(d => d.__timing && window.__drawnAt.get(d) !== d.__timing.drawn).length"
    )


def _draws_after_a_rerun(page: Any, run: Path, message: str) -> int:
    """Charts and grids drawn anew, whatever draws them, in the rerun a new status message brings."""
    return _after_a_rerun(page, run, message, SNAPSHOT_DRAWS_JS, _drawn_anew_js(".jaxdash-line, .jaxdash-chart"))


@pytest.mark.browser
def test_run_detail_redraws_a_training_run_grids_only_every_30_s_or_when_it_ends(
    server: tuple[Server, Path], tab: Any
) -> None:
    """Run detail's rerun for a new status message sends its fed charts and its metric grids unchanged (none
    drawn again: run_sections.GRID_REFRESH_S); the run's end draws the grids anew at once."""
    srv, runs = server
    run = _run_with_rows(runs, 100)
    tab.set_viewport_size({"width": 1400, "height": 2400})  # the grids in view: drawn
    page = open_counting(tab, f"{srv.url}/detail?run={run.name}")
    page.get_by_text("All metrics").first.wait_for(timeout=60_000)
    page.evaluate(WATCH_JS)
    for step in range(100, 105):
        _write(run, step)
        time.sleep(0.2)
    page.wait_for_function("104 in window.__seen", timeout=15_000, polling=30)
    drawn = "[...document.querySelectorAll('{}')].filter(d => d.__timing).length"
    for kind in (".jaxdash-line", ".jaxdash-chart"):  # a fed chart and a grid
        page.wait_for_function(drawn.format(kind) + " >= 1", timeout=15_000, polling=50)
    wait_quiet(page)
    draws = _draws_after_a_rerun(page, run, "a new message: the summary reruns at once")
    assert draws == 0, "a rerun drew a chart or grid of a training run anew"
    RunFolder(run).write_status(state="finished", ended=time.time())
    grids_anew = _drawn_anew_js(".jaxdash-chart")
    page.wait_for_function(f"({grids_anew})() > 0", timeout=15_000, polling=50)  # its final grids


# Whether uPlot draws train/loss's points as markers: its default rule (engine.js leaves the series'
# `points.show` to uPlot), evaluated at each draw: markers while the points are at least two marker sizes
# apart in the chart, a plain line once they are denser.
LOSS_MARKERS_JS = f"""() => {{
  const el = {LOSS_LINE}, u = el && el.__chart.plot;
  const i = u ? u.series.findIndex((s) => s.label === 'train/loss') : -1;
  return i > 0 ? !!u.series[i].points.show(u, i) : null;
}}"""


@pytest.mark.browser
def test_a_fed_chart_is_built_anew_once_its_rows_doubled(server: tuple[Server, Path], tab: Any) -> None:
    """A curve of 10 points shows its points (markers); the draw that appends 60 rows makes it a plain line
    (no spec built anew for it: not 70 markers until the next rerun); once the rows doubled, the next rerun
    builds the chart anew."""
    srv, runs = server
    run = _run_with_rows(runs, 10)
    page = _open_live(tab, srv, run, last_step=9)
    assert page.evaluate(LOSS_MARKERS_JS) is True
    page.evaluate(KEEP_SPEC_JS)
    rows = [{"step": s, "ts": time.time(), "train/loss": 1 / (s + 1)} for s in range(10, 70)]
    RunFolder(run).append_records(rows)
    page.wait_for_function("69 in window.__seen", timeout=15_000, polling=50)
    assert page.evaluate(SPEC_KEPT_JS), "appended by the feed, not a chart built anew"
    assert page.evaluate(LOSS_MARKERS_JS) is False
    assert _rebuilt_after_a_rerun(page, run, "the rows doubled")
    assert page.evaluate(SPEC_JS)["points"] == 70
    assert page.evaluate(LOSS_MARKERS_JS) is False


ACC_LINE = _line_js("train/acc")
ACC_RANGE_JS = f"() => {{ const el = {ACC_LINE}, s = el && el.__chart.scales; return s ? [s.y.min, s.y.max] : null; }}"
# Each draw of the accuracy chart from now on, in window.__accDraws: [whether it drew step 20, its y axis's
# low end]; the axis is read once uPlot has set it (its own microtask, queued in the draw before this one).
WATCH_ACC_DRAWS_JS = """() => {
  window.__accDraws = [];
  const proto = window.__jaxdashLine.LineChart.prototype, draw = proto.draw;
  proto.draw = function (...args) {
    const out = draw.apply(this, args);
    const acc = (this.drawn || []).find((t) => t.name === 'train/acc');
    if (acc) {
      const has20 = acc.x.includes(20);
      queueMicrotask(() => window.__accDraws.push([has20, this.u.scales.y.min]));
    }
    return out;
  };
}"""


@pytest.mark.browser
def test_an_accuracy_chart_widens_its_axis_in_the_draw_that_appends_the_rows(
    server: tuple[Server, Path], tab: Any
) -> None:
    """An appended accuracy below the chart's zoomed y range widens the axis to show it, in the same
    draw as the rows (engine.js's yRange reads the appended points): no draw shows the new row off its axis."""
    srv, runs = server
    run = run_store.new_run_dir(runs, "mnist", "widen")
    cfg = config_to_dict(parse_config("mnist", {}))
    RunFolder(run).write_config("mnist", cfg, name="widen", task_spec="mnist", panels=["loss", "accuracy"])
    RunFolder(run).write_status(state="running", pid=os.getpid(), started=time.time(), step=19, total_steps=10**9)
    rows = [{"step": s, "ts": time.time(), "train/loss": 0.3, "train/acc": 0.9 + 0.001 * s} for s in range(20)]
    RunFolder(run).append_records(rows)
    page = _open_live(tab, srv, run, last_step=19)
    page.wait_for_function(ACC_RANGE_JS, timeout=30_000, polling=50)
    low, high = page.evaluate(ACC_RANGE_JS)
    assert 0.8 < low < 0.9 < 0.919 < high <= 1.0  # zoomed to the data
    wait_quiet(page)
    page.wait_for_timeout(1000)  # past the feed's least gap after a draw: the next rows are drawn at once
    page.evaluate(WATCH_ACC_DRAWS_JS)
    RunFolder(run).append_records([{"step": 20, "ts": time.time(), "train/loss": 0.3, "train/acc": 0.5}])
    RunFolder(run).write_status(step=20)
    page.wait_for_function("20 in window.__seen", timeout=15_000, polling=30)
    page.wait_for_function("window.__accDraws.some(([has20]) => has20)", timeout=5_000, polling=30)
    with_row = [y_low for has20, y_low in page.evaluate("window.__accDraws") if has20]
    assert with_row[0] < 0.5, f"the draw that appended 0.5 kept the axis from {with_row[0]:.3f}"
    assert page.evaluate(ACC_RANGE_JS)[0] < 0.5


# [height, whether it shows its empty text, points drawn] of each line chart of the page
CHART_STATE_JS = """() => Array.from(document.querySelectorAll('.jaxdash-line')).map((el) => {
  const empty = el.querySelector('.jaxdash-line-empty'), c = el.__chart;
  return [Math.round(el.getBoundingClientRect().height), !!(empty && empty.textContent && empty.style.display !== 'none'),
          c && c.data ? c.data.reduce((n, t) => n + t.x.length, 0) : -1];
})"""


@pytest.mark.browser
def test_a_chart_keeps_its_height_when_its_first_point_replaces_its_empty_text(
    server: tuple[Server, Path], tab: Any
) -> None:
    """A running run's charts are drawn before its first record (the plot and "no data yet"); the first points
    replace the text in place: no chart grows or shrinks, so nothing below it jumps (a chart 68 px taller until
    its first point made test_live_browser's blink check fail on a busy machine, where the plot came first)."""
    srv, runs = server
    run = run_store.new_run_dir(runs, "mnist", "first-point")
    cfg = config_to_dict(parse_config("mnist", {}))
    RunFolder(run).write_config("mnist", cfg, name="first-point", task_spec="mnist", panels=["loss", "accuracy"])
    RunFolder(run).write_status(state="running", pid=os.getpid(), started=time.time(), step=0, total_steps=10**9)
    tab.goto(f"{srv.url}/live?run={run.name}")
    empty = _heights_when(tab, "e && n === 0")
    RunFolder(run).append_records(
        [{"step": s, "ts": time.time(), "train/loss": 0.3, "train/acc": 0.9} for s in range(5)]
    )
    RunFolder(run).write_status(step=4)
    assert _heights_when(tab, "!e && n > 0") == empty


def _heights_when(page: Any, state: str) -> list[int]:
    """The heights of the page's two line charts, read in the moment both are in `state` (a JS condition on
    [h, e, n] of CHART_STATE_JS): a panel's rerun replaces its charts, so they are read where they are checked."""
    js = f"() => {{ const s = ({CHART_STATE_JS})(); return s.length === 2 && s.every(([h, e, n]) => {state}) && s.map((c) => c[0]); }}"
    return page.wait_for_function(js, timeout=60_000, polling=50).json_value()
