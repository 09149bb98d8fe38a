"""Every line chart on Live and Run detail offers smoothing, log y and the x-axis choice, kept per browser.

In Chromium against a real server, on a run with 30 records: the loss chart (dashboard/panels/static/chart/)
offers the controls; EMA smoothing draws TensorBoard's debiased EMA of the raw values (checked against
components.series.ema_smooth, the formula TensorBoard's) with the raw line kept behind; log y makes the y
scale logarithmic; x = wall time draws each point at its record's unix time; the settings survive a reload
and hold on Run detail too (saved under the metric's name). In light and dark theme the chart follows the
page (screenshots in /tmp/chart_shots/).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from benchmarks.dashboard_latency import fake_running_run
from components.series import ema_smooth
from dashboard.server.serve import Server
from runstore.run_folder import RunFolder

pytest.importorskip("playwright.sync_api")

SHOTS = Path("/tmp/chart_shots")  # screenshots to look at: the chart in light and dark theme
LOSS = "train/loss"
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
        context.close()
