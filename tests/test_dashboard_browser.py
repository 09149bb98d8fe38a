"""End to end in a real browser: `streamlit run` + headless Chromium (Playwright), a real training run.

Saves test-artifacts/e2e_regression.png. The README's screenshots come from scripts/screenshots.py.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest

from benchmarks.browser_probes import CHARTS_JS
from dashboard.server.serve import Server
from runstore import run_folder, run_store
from runstore.run_folder import RunFolder
from tests.apptest_pages import fake_run

playwright = pytest.importorskip("playwright.sync_api")
pytestmark = pytest.mark.browser

REPO = Path(__file__).resolve().parent.parent
ARTIFACTS = REPO / "test-artifacts"
# Point counts of every series of every drawn chart on the page (what uPlot or plotly drew), in page order.
PLOT_POINTS_JS = f"({CHARTS_JS})().filter(([c, s]) => s).map(([c, s]) => s.map(t => t.n))"


def test_start_regression_run_from_the_page_and_watch_it(server: tuple[Server, Path], tab: Any) -> None:
    srv, runs = server
    ARTIFACTS.mkdir(exist_ok=True)
    page = tab
    page.goto(srv.url)
    start = page.get_by_role("button", name="Start run")
    try:  # a fresh clone's first page load compiles and imports everything: give it a second chance
        start.wait_for(timeout=60_000)
    except playwright.TimeoutError:
        page.reload()
        start.wait_for(timeout=60_000)
    page.get_by_role("textbox", name="Run name").fill("e2e-regression")
    page.get_by_role("spinbutton", name="Steps", exact=True).fill("3000")
    start.click()
    page.wait_for_url("**/live?run=*", timeout=30_000)

    # The live charts fill in while the run trains: data scatter + fitted line, then the loss curve.
    page.wait_for_function(
        f"(() => {{ const c = {PLOT_POINTS_JS}; return c.length >= 2 && c.every(t => t.reduce((a, b) => a + b, 0) > 0); }})()",
        timeout=90_000,
        polling=200,
    )
    page.get_by_text("finished").first.wait_for(timeout=120_000)
    # The final redraw: the data sample (128 points) and the loss curve, one point per chunk (3000 / 10).
    done = f"(() => {{ const c = {PLOT_POINTS_JS}; return c.length >= 2 && c[0][0] === 128 && "
    done += "c[1].reduce((a, b) => a + b, 0) >= 100; })()"
    page.wait_for_function(done, timeout=30_000, polling=200)
    assert page.locator("text=Traceback").count() == 0
    page.screenshot(path=str(ARTIFACTS / "e2e_regression.png"), full_page=True)

    # A second tab (or a reload) finds the same run: the state lives in the run directory.
    other = tab.context.new_page()
    other.goto(page.url)
    other.wait_for_function(
        "[document.body.innerText, ...Array.from(document.querySelectorAll('input'), i => i.value)]"
        ".some(t => t.includes('e2e-regression'))",
        timeout=30_000,
    )
    other.get_by_text("finished").first.wait_for(timeout=30_000)
    (run_dir,) = run_store.run_folders(runs)
    assert RunFolder(run_dir).status()["state"] == "finished"
    assert (run_store.read_json(run_dir / run_folder.CONFIG) or {}).get("name") == "e2e-regression"


def test_detail_page_refreshes_while_its_run_is_active(server: tuple[Server, Path], tab: Any) -> None:
    srv, runs = server
    runs.mkdir(parents=True, exist_ok=True)
    run_dir = fake_run(runs, "mnist", "running", n=20, pid=os.getpid())  # "running" while this test lives
    page = tab
    page.goto(f"{srv.url}/detail?run={run_dir.name}")
    loss_points = f"(() => {{ const c = {PLOT_POINTS_JS}; return c.length && c[0].reduce((a, b) => a + b, 0); }})()"
    page.wait_for_function(f"{loss_points} === 20", timeout=60_000, polling=100)
    RunFolder(run_dir).append_records([{"step": 999, "wall": 9.0, "ts": time.time(), "train/loss": 0.01}])
    page.wait_for_function(f"{loss_points} === 21", timeout=15_000, polling=100)  # no click, no reload
    RunFolder(run_dir).write_status(state="finished", ended=time.time())
    page.get_by_text("finished").first.wait_for(timeout=15_000)
