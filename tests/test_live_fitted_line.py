"""Live's fitted line follows the run's records in the browser, as its loss curve does, without a rerun.

A regression run logs its line's (w, b) with every record (regression/weight, regression/bias); its fit
table is written only now and then. In Chromium against a real server: each record appended to a running
run's metrics.jsonl moves the line on the Live page to that record's (w, b) within a poll and a draw,
while the page's websocket stays quiet (no Streamlit rerun).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from benchmarks.dashboard_latency import fake_running_run
from dashboard.server.serve import Server
from runstore import artifacts, tags
from runstore.run_folder import RunFolder
from tests.test_live_refresh import open_counting, wait_quiet

pytest.importorskip("playwright.sync_api")

# The (w, b) of the fit chart's "model" line as drawn (the chart engine's drawn series), or null before it is drawn.
LINE_JS = """() => {
  for (const g of document.querySelectorAll('.jaxdash-line')) {
    const t = ((g.__chart || {}).data || []).find((t) => t.name === 'model' && t.x.length === 2);
    if (!t) continue;
    const w = (t.y[1] - t.y[0]) / (t.x[1] - t.x[0]);
    return [w, t.y[0] - w * t.x[0]];
  }
  return null;
}"""
AT_JS = f"([w, b]) => {{ const got = ({LINE_JS})(); return !!got && Math.abs(got[0] - w) < 1e-6 && Math.abs(got[1] - b) < 1e-6; }}"


def _table(run: Path, tag: str, columns: list[str], rows: list[list[float]]) -> None:
    """A table as the run store's writer leaves it (artifacts/tables/<tag>.json)."""
    path = artifacts.table_path(run, tag)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"tag": tag, "step": 10, "columns": columns, "rows": rows}))


def _record(run: Path, step: int, w: float, b: float) -> None:
    rec = {"step": step, "wall": step / 100, "ts": time.time(), "train/loss": 1.0 / step}
    RunFolder(run).append_records([{**rec, "regression/weight": w, "regression/bias": b}])


@pytest.mark.browser
def test_the_fitted_line_moves_to_each_new_records_w_and_b_without_a_rerun(
    server: tuple[Server, Path], tab: Any
) -> None:
    srv, runs = server
    run = fake_running_run(runs)  # a regression run (panels: fit, loss), "running"; records appended by hand
    _record(run, 10, 0.1, 0.0)
    _table(run, tags.FIT_DATA, ["x", "y"], [[x / 10, 2 * x / 10 - 1] for x in range(-10, 11)])
    _table(run, tags.FIT_CURVE, ["x", "y", "y_true"], [[-1.0, -0.1, -3.0], [1.0, 0.1, 1.0]])  # the line at step 10
    page = open_counting(tab, f"{srv.url}/live?run={run.name}")
    page.wait_for_function(AT_JS, arg=[0.1, 0.0], timeout=60_000, polling=50)
    quiet = wait_quiet(page)
    delays = []
    for i in range(1, 5):  # the line slides onto the data, as w and b learn
        w, b = 0.1 + 0.45 * i, -0.25 * i
        written = time.monotonic()
        _record(run, 10 + 10 * i, w, b)
        page.wait_for_function(AT_JS, arg=[w, b], timeout=10_000, polling=20)
        delays.append(time.monotonic() - written)
    assert page.evaluate("window.__wsIn") == quiet, "the line moved by a rerun of the page, not by its feed"
    # A poll (250 ms) and a draw; a loaded 2-core machine gets room (the fit table is never written again here:
    # without the feed, the line stays at step 10's)
    assert max(delays) < 3.0, delays
