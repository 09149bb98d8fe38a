"""Every line chart on Live, Run detail and Compare offers smoothing, log y and the x-axis choice, kept per browser.

In Chromium against a real server, on a run with 30 records: the loss chart (dashboard/panels/static/chart/)
offers the controls; EMA smoothing draws TensorBoard's debiased EMA of the raw values (checked against
components.series.ema_smooth, the formula TensorBoard's) with the raw line kept behind; log y makes the y
scale logarithmic; x = wall time draws each point at its record's unix time; the settings survive a reload
and hold on Run detail too (saved under the metric's name). In light and dark theme the chart follows the
page (screenshots in /tmp/chart_shots/). Compare's grid (dashboard/panels/static/line_grid.js with grid_view.js)
and Run detail's "All metrics" grid offer the same controls from the same code (static/chart/controls.js), checked
the same way on their loss panel, with any other logged scalar (here the learning rate) as the x axis. The
figures still drawn by plotly.js (a population's fit chart on Live, the Sweeps page's best-so-far and parallel
coordinates) follow the theme too: their drawn SVG's paper, plot area and text colours are read in the page
(screenshots in /tmp/theme_shots/).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import optuna
import pytest

from benchmarks.dashboard_latency import fake_running_run
from components.series import ema_smooth
from dashboard.server.serve import Server
from runstore.run_folder import RunFolder
from settings.sweep import study as studies
from settings.sweep.space import parse_space
from tests.apptest_pages import fake_population, fake_run
from tests.colour_math import contrast, rgb
from training.tasks import load_task

pytest.importorskip("playwright.sync_api")
from playwright.sync_api import TimeoutError as PlaywrightTimeout  # noqa: E402 - only where Playwright is

SHOTS = Path("/tmp/chart_shots")  # screenshots to look at: the chart in light and dark theme
LOSS = "train/loss"
LR = "train/lr"  # a logged scalar the x axis may be (W&B's x-axis picker)
# The loss chart's element (its spec's metric is "loss"), once it drew the run's 30 points.
FIND = """() => Array.from(document.querySelectorAll('.jaxdash-line')).find((el) => el.__chart
  && el.__chart.spec.metric === 'loss' && (el.__chart.data || []).some((s) => s.name === 'train/loss' && s.x.length >= 30))"""
DRAWN = f"() => ({FIND})().__chart.data.find((s) => s.name === '{LOSS}')"


def _run(runs: Path) -> tuple[Path, list[float], list[float]]:
    """A running regression run with 30 noisy loss records: (folder, values, their unix times)."""
    run = fake_running_run(runs)
    start = time.time() - 100
    values = [1.0 / (s + 1) + (0.05 if s % 3 == 0 else 0.0) for s in range(1, 31)]
    rows = [
        {"step": s, "wall": 2.0 * s, "ts": start + 2.0 * s, LOSS: v} for s, v in zip(range(1, 31), values, strict=True)
    ]
    RunFolder(run).append_records(rows)
    return run, [1.0, *values], [time.time(), *[start + 2.0 * s for s in range(1, 31)]]


def _control(page: Any, css: str) -> Any:
    return page.locator(f".jaxdash-line:has(.jaxdash-chart-controls) {css}").first


def _loss_chart(page: Any) -> None:
    page.wait_for_function(f"() => !!({FIND})()", timeout=60_000, polling=100)


@pytest.mark.browser
def test_smoothing_log_y_and_x_axis_on_live_and_run_detail_persist(server: tuple[Server, Path], tab: Any) -> None:
    srv, runs = server
    run, values, _ = _run(runs)
    start = RunFolder(run).records(0, max_bytes=4096)[0][0]
    t0 = start["ts"] - start["wall"]
    tab.goto(f"{srv.url}/live?run={run.name}")
    _loss_chart(tab)
    chart = tab.evaluate_handle(FIND)
    for css in ("select.jaxdash-smooth", "input.jaxdash-logy", "select.jaxdash-x", "input.jaxdash-outliers"):
        assert chart.evaluate(f"(el) => !!el.querySelector('{css}')"), f"no {css} on Live's loss chart"
    raw = tab.evaluate(DRAWN)["y"]
    assert raw == pytest.approx(values[: len(raw)]) and len(raw) >= 30

    chart.evaluate(
        "(el) => { const s = el.querySelector('select.jaxdash-smooth'); s.value = 'ema'; s.dispatchEvent(new Event('change')); }"
    )
    chart.evaluate(
        "(el) => { const w = el.querySelector('input.jaxdash-weight'); w.value = '0.6'; w.dispatchEvent(new Event('change')); }"
    )
    smoothed = tab.evaluate(DRAWN)
    assert smoothed["y"] == pytest.approx(ema_smooth(raw, 0.6).tolist(), rel=1e-12), "not TensorBoard's debiased EMA"
    assert smoothed["raw"] == pytest.approx(raw), "the raw line is not kept behind the smoothed one"
    assert smoothed["y"][0] == pytest.approx(raw[0])  # debiased: the first point is the first value, not 0.4 of it

    assert tab.evaluate(f"() => ({FIND})().__chart.scales.y.distr") == 1
    chart.evaluate(
        "(el) => { const c = el.querySelector('input.jaxdash-logy'); c.checked = true; c.dispatchEvent(new Event('change')); }"
    )
    assert tab.evaluate(f"() => ({FIND})().__chart.scales.y.distr") == 3, "log y did not make the y scale logarithmic"

    chart.evaluate(
        "(el) => { const s = el.querySelector('select.jaxdash-x'); s.value = 'wall'; s.dispatchEvent(new Event('change')); }"
    )
    walled = tab.evaluate(DRAWN)
    assert tab.evaluate(f"() => ({FIND})().__chart.scales.x.time") is True
    expected = [t0 + 2.0 * s for s in range(len(walled["x"]))]
    assert walled["x"] == pytest.approx(expected, abs=1e-3), (
        "x = wall time did not draw each point at its record's time"
    )

    tab.reload()  # the settings are the browser's: a reload keeps them
    _loss_chart(tab)
    kept = tab.evaluate(f"() => ({FIND})().__chart.settings")
    assert kept["smooth"] == "ema" and kept["logY"] is True and kept["x"] == "wall", kept
    assert tab.evaluate(DRAWN)["y"] == pytest.approx(ema_smooth(raw, 0.6).tolist(), rel=1e-12)

    tab.goto(f"{srv.url}/detail?run={run.name}")  # Run detail's loss chart: the same controls, the same settings
    _loss_chart(tab)
    chart = tab.evaluate_handle(FIND)
    for css in ("select.jaxdash-smooth", "input.jaxdash-logy", "select.jaxdash-x"):
        assert chart.evaluate(f"(el) => !!el.querySelector('{css}')"), f"no {css} on Run detail's loss chart"
    assert tab.evaluate(f"() => ({FIND})().__chart.settings")["smooth"] == "ema"
    chart.evaluate(
        "(el) => { const s = el.querySelector('select.jaxdash-x'); s.value = 'step'; s.dispatchEvent(new Event('change')); }"
    )
    chart.evaluate(
        "(el) => { const s = el.querySelector('select.jaxdash-smooth'); s.value = 'none'; s.dispatchEvent(new Event('change')); }"
    )
    assert tab.evaluate(DRAWN)["x"][:3] == [0, 1, 2] and tab.evaluate(DRAWN)["y"] == pytest.approx(raw)
    tab.evaluate("() => localStorage.clear()")


@pytest.mark.browser
def test_charts_follow_the_light_and_dark_theme(server: tuple[Server, Path], chromium: Any) -> None:
    srv, runs = server
    run, _, _ = _run(runs)
    SHOTS.mkdir(parents=True, exist_ok=True)
    for scheme in ("light", "dark"):  # Streamlit's default theme follows the system's colour scheme
        context = chromium.new_context(viewport={"width": 1400, "height": 950}, color_scheme=scheme)
        page = context.new_page()
        page.goto(f"{srv.url}/live?run={run.name}")
        _loss_chart(page)
        page.wait_for_function(f"() => ({FIND})().__chart.dark === {str(scheme == 'dark').lower()}", timeout=10_000)
        page.locator(".jaxdash-line").first.screenshot(path=str(SHOTS / f"live_{scheme}.png"))
        page.screenshot(path=str(SHOTS / f"live_{scheme}_page.png"))
        page.goto(f"{srv.url}/detail?run={run.name}")  # Run detail's "All metrics" grid follows the theme too
        _detail_grid(page)
        page.wait_for_function(f"() => ({DETAIL_GRID})().__gridView.dark === {str(scheme == 'dark').lower()}")
        page.evaluate(f"() => ({DETAIL_GRID})().scrollIntoView()")
        page.evaluate_handle(DETAIL_GRID).as_element().screenshot(path=str(SHOTS / f"detail_grid_{scheme}.png"))
        context.close()


# Compare's grid (a .jaxdash-chart drawn by line_grid.js) once its loss panel drew both runs' 30 points.
GRID = """() => Array.from(document.querySelectorAll('.jaxdash-chart')).find((d) => d.__gridView
  && d.__gridView.panels.some((p) => p.title === 'train/loss'
    && p.lines.filter((l) => !l.raw && !l.fill && l.x.length >= 30).length >= 2))"""
GRID_LINE = f"""(name) => ({GRID})().__gridView.panels.find((p) => p.title === '{LOSS}')
  .lines.find((l) => l.name === name && !l.raw)"""
GRID_RAW = f"""(name) => ({GRID})().__gridView.panels.find((p) => p.title === '{LOSS}')
  .lines.find((l) => l.name === name && l.raw)"""
GRID_SCALES = """() => { const u = document.querySelector('.jaxdash-grid-cells .uplot').__uplot;
  return {x: {...u.scales.x}, y: {...u.scales.y}}; }"""


def _lr(k: int, step: int) -> float:
    """Run k's learning rate at `step`: each run's own schedule."""
    return 0.01 * (k + 1) * step


def _compared(runs: Path) -> tuple[list[Path], list[float], float]:
    """Two finished runs of 30 noisy loss records each: (folders, run a's values, run a's start in unix seconds)."""
    start = time.time() - 1000
    dirs, first = [], []
    for k, name in enumerate(("a", "b")):
        values = [1.0 / (s + k + 1) + (0.05 if s % 3 == 0 else 0.0) for s in range(1, 31)]
        rows = [
            {"step": s, "wall": 2.0 * s, "ts": start + 2.0 * s, LOSS: v, LR: _lr(k, s)} for s, v in enumerate(values, 1)
        ]
        dirs.append(fake_run(runs, "regression", "finished", name=name, n=0))
        RunFolder(dirs[-1]).append_records(rows)
        first = first or values
    return dirs, first, start


def _set(page: Any, css: str, value: str | bool, grid: str = GRID) -> None:
    """Set the control `css` of the grid `grid` finds to `value` as a user's change does (its change event)."""
    prop = "checked" if isinstance(value, bool) else "value"
    page.evaluate(
        f"""(v) => {{ const el = ({grid})().querySelector('{css}'); el.{prop} = v;
        el.dispatchEvent(new Event('change')); }}""",
        value,
    )


def _drawn(line: str, name: str, n: int = 30) -> str:
    """A predicate: the line `line` finds by `name` draws `n` points (none found, while its x is read: false)."""
    return f"() => {{ try {{ return ({line})('{name}').x.length === {n}; }} catch (e) {{ return false; }} }}"


def _x_options(page: Any, grid: str) -> list[str]:
    return page.evaluate(f"() => Array.from(({grid})().querySelector('select.jaxdash-x').options, (o) => o.value)")


@pytest.mark.browser
def test_smoothing_log_y_and_x_axis_on_compare_persist(server: tuple[Server, Path], tab: Any) -> None:
    srv, runs = server
    dirs, values, start = _compared(runs)
    tab.set_viewport_size({"width": 1400, "height": 1000})
    url = f"{srv.url}/runs?compare={dirs[0].name},{dirs[1].name}"
    tab.goto(url)
    tab.wait_for_function(f"() => !!({GRID})()", timeout=60_000, polling=100)
    for css in ("select.jaxdash-smooth", "input.jaxdash-logy", "select.jaxdash-x", "input.jaxdash-outliers"):
        assert tab.evaluate(f"() => !!({GRID})().querySelector('{css}')"), f"no {css} on Compare's grid"
    raw = tab.evaluate(GRID_LINE, "a")["y"]
    assert raw == pytest.approx(values)
    colors = {tab.evaluate(GRID_LINE, n)["color"] for n in ("a", "b")}
    assert colors == {"#4e79a7", "#f28e2b"}, "runs not coloured by the theme's qualitative palette"

    _set(tab, "select.jaxdash-smooth", "ema")
    _set(tab, "input.jaxdash-weight", "0.6")
    smoothed = tab.evaluate(GRID_LINE, "a")["y"]
    assert smoothed == pytest.approx(ema_smooth(raw, 0.6).tolist(), rel=1e-12), "not TensorBoard's debiased EMA"
    assert tab.evaluate(GRID_RAW, "a")["y"] == pytest.approx(raw), "the raw line is not kept behind the smoothed one"

    assert tab.evaluate(GRID_SCALES)["y"]["distr"] == 1
    _set(tab, "input.jaxdash-logy", True)
    assert tab.evaluate(GRID_SCALES)["y"]["distr"] == 3, "log y did not make the y scale logarithmic"

    _set(tab, "select.jaxdash-x", "wall")
    walled = tab.evaluate(GRID_LINE, "a")["x"]
    assert tab.evaluate(GRID_SCALES)["x"]["time"] is True
    assert walled == pytest.approx([start + 2.0 * s for s in range(1, 31)], abs=1e-3), (
        "x = wall time: not each record's time"
    )

    tab.goto(url)  # the page anew (the Runs page drops ?compare= once read): the browser keeps the settings
    tab.wait_for_function(f"() => !!({GRID})()", timeout=60_000, polling=100)
    kept = tab.evaluate(f"() => ({GRID})().__gridView.settings")
    assert kept["smooth"] == "ema" and kept["logY"] is True and kept["x"] == "wall", kept
    assert tab.evaluate(GRID_LINE, "a")["y"] == pytest.approx(ema_smooth(raw, 0.6).tolist(), rel=1e-12)
    assert tab.evaluate(GRID_SCALES)["y"]["distr"] == 3

    assert LR in _x_options(tab, GRID), "the x axis does not offer the runs' other logged scalars"
    _set(tab, "select.jaxdash-x", LR)  # each run's loss against its own learning rate, read from the server
    for k, name in enumerate(("a", "b")):
        tab.wait_for_function(_drawn(GRID_LINE, name), timeout=10_000, polling=50)
        assert tab.evaluate(GRID_LINE, name)["x"] == pytest.approx([_lr(k, s) for s in range(1, 31)]), name
    tab.evaluate("() => localStorage.clear()")


@pytest.mark.browser
def test_compare_grid_follows_the_light_and_dark_theme(server: tuple[Server, Path], chromium: Any) -> None:
    srv, runs = server
    dirs, _, _ = _compared(runs)
    SHOTS.mkdir(parents=True, exist_ok=True)
    for scheme in ("light", "dark"):
        context = chromium.new_context(viewport={"width": 1400, "height": 1000}, color_scheme=scheme)
        page = context.new_page()
        page.goto(f"{srv.url}/runs?compare={dirs[0].name},{dirs[1].name}")
        page.wait_for_function(f"() => !!({GRID})()", timeout=60_000, polling=100)
        page.wait_for_function(f"() => ({GRID})().__gridView.dark === {str(scheme == 'dark').lower()}", timeout=10_000)
        page.evaluate(f"() => ({GRID})().scrollIntoView()")
        page.locator(".jaxdash-chart:has(.jaxdash-grid-cells)").first.screenshot(
            path=str(SHOTS / f"compare_{scheme}.png")
        )
        context.close()


# Run detail's "All metrics" grid (run_sections.metric_grids) once its loss panel drew the run's 30 points.
DETAIL_GRID = """() => Array.from(document.querySelectorAll('.jaxdash-chart')).find((d) => d.__gridView
  && d.__gridView.panels.some((p) => p.title === 'train/loss' && p.lines.some((l) => !l.raw && l.x.length >= 30)))"""
DETAIL_LINE = f"""(name) => ({DETAIL_GRID})().__gridView.panels.find((p) => p.title === '{LOSS}')
  .lines.find((l) => l.name === name && !l.raw)"""
DETAIL_SCALES = f"""() => {{ const u = ({DETAIL_GRID})().querySelector('.jaxdash-grid-cells .uplot').__uplot;
  return {{x: {{...u.scales.x}}, y: {{...u.scales.y}}}}; }}"""


def _detail_grid(page: Any) -> None:
    """Wait for Run detail's "All metrics" loss panel, scrolled to while it is not drawn (its grids draw when
    near, and the charts drawn above it may push it out of view again)."""
    page.wait_for_function(
        f"""() => {{ if (({DETAIL_GRID})()) return true;
          const head = Array.from(document.querySelectorAll('h3')).find((h) => h.textContent.includes('All metrics'));
          if (head) head.scrollIntoView();
          return false; }}""",
        timeout=60_000,
        polling=250,
    )


@pytest.mark.browser
def test_smoothing_log_y_and_x_axis_on_run_details_all_metrics(server: tuple[Server, Path], tab: Any) -> None:
    srv, runs = server
    dirs, values, start = _compared(runs)
    run = dirs[0]
    tab.set_viewport_size({"width": 1400, "height": 1000})
    tab.goto(f"{srv.url}/detail?run={run.name}")
    _detail_grid(tab)
    for css in ("select.jaxdash-smooth", "input.jaxdash-logy", "select.jaxdash-x", "input.jaxdash-outliers"):
        assert tab.evaluate(f"() => !!({DETAIL_GRID})().querySelector('{css}')"), f"no {css} on Run detail's grid"
    assert {"step", "wall", "relative", LR} <= set(_x_options(tab, DETAIL_GRID))
    raw = tab.evaluate(DETAIL_LINE, "a")["y"]
    assert raw == pytest.approx(values)

    _set(tab, "select.jaxdash-smooth", "ema", DETAIL_GRID)
    _set(tab, "input.jaxdash-weight", "0.6", DETAIL_GRID)
    assert tab.evaluate(DETAIL_LINE, "a")["y"] == pytest.approx(ema_smooth(raw, 0.6).tolist(), rel=1e-12)

    assert tab.evaluate(DETAIL_SCALES)["y"]["distr"] == 1
    _set(tab, "input.jaxdash-logy", True, DETAIL_GRID)
    assert tab.evaluate(DETAIL_SCALES)["y"]["distr"] == 3, "log y did not make the y scale logarithmic"

    _set(tab, "select.jaxdash-x", "wall", DETAIL_GRID)
    assert tab.evaluate(DETAIL_SCALES)["x"]["time"] is True
    assert tab.evaluate(DETAIL_LINE, "a")["x"] == pytest.approx([start + 2.0 * s for s in range(1, 31)], abs=1e-3)

    _set(tab, "select.jaxdash-x", LR, DETAIL_GRID)  # the loss against the run's learning rate
    tab.wait_for_function(_drawn(DETAIL_LINE, "a"), timeout=10_000, polling=50)
    assert tab.evaluate(DETAIL_LINE, "a")["x"] == pytest.approx([_lr(0, s) for s in range(1, 31)])
    tab.evaluate("() => localStorage.clear()")


# A chart drawn by plotly.js (its graph div: .js-plotly-plot) whose title starts with the argument, once drawn.
PLOTLY = """(title) => Array.from(document.querySelectorAll('.js-plotly-plot')).find((d) => d._fullLayout
  && Array.from(d.querySelectorAll('.gtitle')).some((t) => t.textContent.startsWith(title)))"""
# The colours the chart's SVG was drawn with, and the page's own background (Streamlit's theme).
DRAWN_COLOURS = f"""(title) => {{ const d = ({PLOTLY})(title), css = (el) => el && getComputedStyle(el);
  return {{paper: css(d.querySelector('svg.main-svg')).backgroundColor, plot: (css(d.querySelector('.bglayer .bg')) || {{}}).fill,
    title: css(d.querySelector('.gtitle')).fill, tick: css(d.querySelector('.xtick text, .axis .tick text')).fill,
    page: getComputedStyle(document.querySelector('.stApp')).backgroundColor}}; }}"""


def _luma(css: str) -> float:
    """The brightness (0-255) of a CSS colour "rgb(r, g, b)"."""
    r, g, b = rgb(css)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def _follows(page: Any, title: str, dark: bool) -> dict[str, str]:
    """The drawn colours of the plotly chart `title`, once its paper is the page's background; asserted to be
    the theme's: a dark paper and plot area with light text in the dark theme, the reverse in the light one."""
    page.wait_for_function(f"() => !!({PLOTLY})({title!r})", timeout=60_000, polling=100)
    try:  # the theme watch redraws within a second when the theme settles after the first draw
        page.wait_for_function(
            f"() => {{ const c = ({DRAWN_COLOURS})({title!r}); return c.paper === c.page; }}",
            timeout=10_000,
            polling=100,
        )
    except PlaywrightTimeout:
        pass  # the assertions below say what was drawn
    drawn = page.evaluate(f"() => ({DRAWN_COLOURS})({title!r})")
    assert drawn["paper"] == drawn["page"], f"{title}: paper {drawn['paper']} on a page of {drawn['page']}"
    for part in ("paper", "plot") if drawn["plot"] else ("paper",):  # parallel coordinates have no plot area
        assert (_luma(drawn[part]) < 128) == dark, (
            f"{title}: {part} {drawn[part]} in the {'dark' if dark else 'light'} theme"
        )
    for part in ("title", "tick"):
        assert (_luma(drawn[part]) > 128) == dark, (
            f"{title}: {part} text {drawn[part]} in the {'dark' if dark else 'light'} theme"
        )
    return drawn


def _study(runs: Path) -> None:
    """A finished sweep of three trials over lr (no training: the trials told their values)."""
    url = studies.default_url(runs)
    space = parse_space(["lr=0.01,0.1,0.3"], load_task("regression").Config, "grid")
    study = studies.create("themes", url, studies.StudySpec("regression", {"steps": 60}, space, "grid"))
    lr = optuna.distributions.FloatDistribution(0.001, 1.0)
    for k, value in enumerate((0.9, 0.3, 0.2)):
        trial = optuna.trial.create_trial(
            params={"lr": (0.01, 0.1, 0.3)[k]}, distributions={"lr": lr}, value=value, user_attrs={"objective": LOSS}
        )
        study.add_trial(trial)


@pytest.mark.browser
def test_plotly_figures_follow_the_light_and_dark_theme(server: tuple[Server, Path], chromium: Any) -> None:
    srv, runs = server
    members = fake_population(runs, lrs=(0.001, 0.02), seeds=(0,))
    _study(runs)
    for scheme in ("dark", "light"):
        context = chromium.new_context(viewport={"width": 1400, "height": 1100}, color_scheme=scheme)
        page = context.new_page()
        page.goto(f"{srv.url}/live?run={members[0].name}")
        _follows(page, "Fits of 2 members", scheme == "dark")
        page.goto(f"{srv.url}/sweeps?study=themes")
        _follows(page, "Best so far", scheme == "dark")
        drawn = _follows(page, "Trials", scheme == "dark")  # parallel coordinates (plotly.js's full bundle)
        _trials_read_on_the_page(page, drawn["page"])
        context.close()


def _trials_read_on_the_page(page: Any, background: str) -> None:
    """The sweep's parallel coordinates as drawn: the best trial (the lowest loss: the scale's low end) stands out
    from the page's background (WCAG's 3:1 for graphics), more than the worst (the high end), which stays visible."""
    line = page.evaluate(f"() => ({PLOTLY})('Trials')._fullData[0].line")
    scale = line["colorscale"]
    best, worst = contrast(scale[0][1], background), contrast(scale[-1][1], background)
    assert best >= 3 and best > worst >= 1.5, (background, scale, round(best, 2), round(worst, 2))
