"""What a user sees, measured in the page: chart blink sampling and first-point timing (Playwright).

Shared by `benchmarks/dashboard_latency.py` and the browser tests, so both report the same numbers.

Blink: every 100 ms the page notes, for every chart, its effective opacity (the product of
the computed opacity of the chart and all its ancestors: Streamlit fades a stale element's
container to 0.33), its size and position, and whether it has drawn (uPlot's or plotly's). `blink_report` turns
those samples into the fraction of (sample, chart) pairs in which a chart was faded, missing,
blank or had jumped.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runstore import run_folder

REPO = Path(__file__).resolve().parent.parent

FADED_BELOW = 0.9  # effective opacity under this is a visible fade (Streamlit's stale fade ends at 0.33)
JUMP_PX = 8  # a chart whose top or height moved more than this between two samples jumped

# Every chart of the page: [element that Streamlit fades, its drawn series or null while it shows none, its title].
# A series is {name, x, y, n} (n: its number of points, x and y may be longer): what the chart drew. Line charts
# (dashboard/panels/static/chart/, class jaxdash-line) give their engine's drawn series (`__chart.data`, once
# uPlot drew them); plotly charts (st.plotly_chart, and the in-place ones of dashboard/panels/inplace_chart.py,
# class jaxdash-chart) give plotly's traces once it drew traces, not just axes.
CHARTS_JS = """() => {
  const plotly = (g) => (g && g._fullLayout && g.querySelector('.main-svg .trace')
    ? (g._fullData || []).map((t) => ({name: t.name, x: t.x || [], y: t.y || [], n: t._length || 0})) : null);
  const title = (g) => { const t = g && g.layout && g.layout.title; return (t && (t.text || t)) || ""; };
  const out = [];
  for (const c of document.querySelectorAll('[data-testid="stPlotlyChart"]')) {
    const g = c.querySelector('.js-plotly-plot');
    out.push([c, plotly(g), title(g)]);
  }
  for (const g of document.querySelectorAll('.jaxdash-chart')) out.push([g, g.classList.contains('js-plotly-plot') ? plotly(g) : null, title(g)]);
  for (const g of document.querySelectorAll('.jaxdash-line')) {
    const c = g.__chart;
    out.push([g, c && c.plot ? c.data.map((t) => ({name: t.name, x: t.x, y: t.y, n: t.x.length})) : null, c ? c.spec.title || "" : ""]);
  }
  return out;
}"""
# Every chart that drew a point, in page order: {title, series}.
DRAWN_CHARTS_JS = f"(() => ({CHARTS_JS})().filter(([c, s]) => s && s.some((t) => t.n)).map(([c, series, title]) => ({{title, series}})))()"
# Every drawn series of the page, every chart's, in page order.
SERIES_JS = f"(() => ({CHARTS_JS})().flatMap(([c, s]) => s || []))()"

# Every 100 ms: one row per chart [opacity, width, height, top, drawn, points, stale]; stale: Streamlit
# marks the chart as waiting for its rerun (data-stale), whether or not the page shows a fade for it.
SAMPLE_JS = (
    """() => {
  if (window.__blink) clearInterval(window.__blink.timer);
  const charts = """
    + CHARTS_JS
    + """;
  const sample = () => charts().map(([c, s]) => {
    let op = 1;
    for (let e = c; e; e = e.parentElement) op *= parseFloat(getComputedStyle(e).opacity);
    const r = c.getBoundingClientRect();
    const drawn = s !== null;
    const points = drawn ? s.reduce((a, t) => a + t.n, 0) : 0;
    const stale = !!c.closest('[data-stale="true"]');
    return [op, Math.round(r.width), Math.round(r.height), Math.round(r.top + window.scrollY), drawn, points, stale];
  });
  window.__blink = {samples: [], timer: setInterval(() => window.__blink.samples.push([Date.now(), sample()]), 100)};
}"""
)
STOP_JS = "() => { clearInterval(window.__blink.timer); return window.__blink.samples; }"

# The time at which the first chart series named `name` first held a point (window.__firstDrawn).
FIRST_POINT_JS = (
    """(name) => {
  window.__firstDrawn = null;
  const t = setInterval(() => {
    if ("""
    + SERIES_JS
    + """.some((tr) => tr.name === name && tr.n)) { window.__firstDrawn = Date.now(); clearInterval(t); }
  }, 20);
}"""
)


@dataclass
class BlinkReport:
    """Blink statistics over the samples in which the page showed its full set of charts."""

    samples: int
    charts: int
    faded: int
    missing: int
    jumped: int
    min_opacity: float
    span_s: float = 0.0  # seconds the scored samples cover
    stale: int = 0  # (sample, chart) pairs Streamlit marked stale (a refresh still running), faded or not
    events: list[str] = field(default_factory=list)  # the first bad pairs: "t=<s> chart <i>: <what>"

    @property
    def bad(self) -> int:
        return self.faded + self.missing + self.jumped

    @property
    def fraction(self) -> float:
        """Bad (sample, chart) pairs over all pairs."""
        return self.bad / max(1, self.samples * self.charts)

    def __str__(self) -> str:
        return (
            f"{self.fraction:.2%} of {self.samples} samples x {self.charts} charts faded/missing/jumped "
            f"(faded {self.faded}, missing or blank {self.missing}, jumped {self.jumped}; "
            f"lowest opacity {self.min_opacity:.2f}; over {self.span_s:.1f} s; "
            f"marked stale by Streamlit, shown unfaded: {self.stale / max(1, self.samples * self.charts):.1%})"
            + "".join(f"; {e}" for e in self.events)
        )


def blink_report(samples: list[list[Any]]) -> BlinkReport:
    """Score samples from SAMPLE_JS, from the first in which every chart is drawn with data.

    Only charts with a height count as shown (Streamlit keeps a replaced element, collapsed to
    zero height, until the rerun ends). The expected charts are the most common number shown once
    one holds a point; a sample showing fewer is missing the rest, an undrawn chart is blank, a
    chart under FADED_BELOW opacity is faded, and one whose height or top moved more than JUMP_PX
    since the previous sample jumped.
    """
    shown = [(t, [r for r in rows if r[2] > 0]) for t, rows in samples]
    counts = [len(rows) for _, rows in shown if rows and any(r[5] for r in rows)]
    if not counts:
        return BlinkReport(0, 0, 0, 0, 0, 1.0)
    expected = statistics.mode(counts)
    start = next(i for i, (_, rows) in enumerate(shown) if len(rows) == expected and all(r[4] for r in rows))
    faded = missing = jumped = stale = 0
    lowest, prev, events = 1.0, None, []
    t0 = shown[start][0]
    for t, rows in shown[start:]:
        missing += max(0, expected - len(rows))
        if len(rows) < expected:
            events.append(f"t={(t - t0) / 1000:.1f} {expected - len(rows)} chart(s) missing")
        for i, (op, _w, h, top, drawn, _pts, *marked) in enumerate(rows[:expected]):
            lowest = min(lowest, op)
            stale += bool(marked and marked[0])
            moved = prev is not None and i < len(prev) and max(abs(prev[i][2] - h), abs(prev[i][3] - top)) > JUMP_PX
            at = f"t={(t - t0) / 1000:.1f} chart {i}"
            if op < FADED_BELOW:
                faded += 1
                events.append(f"{at}: opacity {op:.2f}")
            elif not drawn:
                missing += 1
                events.append(f"{at}: blank")
            elif moved:
                jumped += 1
                events.append(f"{at}: top {prev[i][3]} -> {top}, height {prev[i][2]} -> {h}")
        prev = rows
    span = (shown[-1][0] - t0) / 1000
    return BlinkReport(len(shown) - start, expected, faded, missing, jumped, lowest, span, stale, events[:10])


def median_s(xs: list[float]) -> str:
    """median / max of seconds, for the reports."""
    return f"median {statistics.median(xs):.2f} s · max {max(xs):.2f} s (n={len(xs)})"


def cli_run(runs: Path, argv: list[str], env: dict[str, str] | None = None) -> tuple[subprocess.Popen, Path]:
    """Start `python -m training ARGV --run-dir <new dir>` as a user would from a shell; (process, run dir)."""
    run_dir = runs / f"cli-{time.strftime('%H%M%S')}-{os.getpid()}-{len(list(runs.glob('cli-*')))}"
    cmd = [sys.executable, "-m", "training", *argv, "--run-dir", str(run_dir), "--wandb", "disabled", "--quiet"]
    proc = subprocess.Popen(cmd, cwd=REPO, env={**os.environ, **(env or {})}, stdout=subprocess.DEVNULL)
    return proc, run_dir


def watch_blinks(
    page: Any, url: str, run_dir: Path, proc: subprocess.Popen, timeout: float = 600, watch_s: float | None = None
) -> BlinkReport:
    """Open the run's Live page once the run exists, sample its charts every 100 ms until the run ends; the report.

    watch_s: stop sampling this many seconds after the first point was drawn, if the run has not ended by then
    (a test's run then trains only as long as it is watched, on a fast machine or a slow one).

    Opened before the run's folder exists, the page says "No run ..." above another run's charts and
    switches to the run when it appears: that warning going (the charts move up 75 px) and the other
    run's charts replaced by this run's (blank until drawn) were scored as a jump and a blank.
    """
    deadline = time.monotonic() + 60
    while not (run_dir / run_folder.STATUS).exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    page.goto(f"{url}/live?run={run_dir.name}")
    page.wait_for_function(f"({CHARTS_JS})().length > 0", timeout=60_000, polling=100)
    page.evaluate(SAMPLE_JS)
    if watch_s is not None:  # counted from the first point drawn: a run's start takes longer on a loaded machine
        page.wait_for_function(f"{SERIES_JS}.some(t => t.n)", timeout=120_000)
    try:
        proc.wait(min(timeout, watch_s) if watch_s is not None else timeout)
    except subprocess.TimeoutExpired:
        if watch_s is None or watch_s >= timeout:
            raise
    finally:
        samples = page.evaluate(STOP_JS)
    return blink_report(samples)
