"""Screenshots of every dashboard page, taken the way a user gets there (real runs, headless Chromium).

  .venv/bin/python scripts/screenshots.py [--out test-artifacts/screenshots] [--docs]

Starts `streamlit run dashboard/server_app.py` on a fresh runs root, then in the browser: fills a
population on New run, starts a regression population and two Fashion-MNIST runs, and
captures Live (population, MNIST while it trains), Runs & compare (two runs overlaid) and Run
detail (confusion matrix). With --docs the best ones also go to docs/ for the README.
Needs Fashion-MNIST locally (apt-get install dataset-fashion-mnist); takes a few minutes.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from playwright.sync_api import Page, sync_playwright  # noqa: E402
from playwright.sync_api import TimeoutError as PlaywrightTimeout  # noqa: E402

from benchmarks.browser_probes import CHARTS_JS  # noqa: E402
from dashboard.server.serve import CHROMIUM, CHROMIUM_ARGS, start_server  # noqa: E402
from runstore.run_folder import RunFolder  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
VIEWPORT = {"width": 1400, "height": 950}
# How many charts have drawn a point (Plotly figures, the line charts' engine, metric grids that report it).
PLOTS_DRAWN_JS = f"({CHARTS_JS})().filter(([c, s]) => s && s.some((t) => t.n)).length"
# A comparison's metric grid (uPlot) has drawn a line with points.
GRID_DRAWN_JS = (
    "Array.from(document.querySelectorAll('.jaxdash-chart')).some((g) => g.__gridView && "
    "g.__gridView.panels.some((p) => p.lines.some((l) => l.x.length)))"
)
# Each drawn chart's points per series, in page order.
PLOT_POINTS_JS = f"({CHARTS_JS})().filter(([c, s]) => s).map(([c, s]) => s.map((t) => t.n))"


def settle(page: Page, seconds: float = 1.0) -> None:
    """Let plotly finish drawing (and Streamlit its reruns) before a screenshot."""
    page.wait_for_load_state("networkidle")
    time.sleep(seconds)


def new_run_form(page: Page, url: str, task: str) -> None:
    """Open New run on `task` with its form ready."""
    page.goto(url)
    page.get_by_role("button", name="Start run").wait_for(timeout=60_000)
    if task == "mnist":
        page.get_by_text("MNIST / Fashion-MNIST", exact=True).click()
        page.get_by_label("Batch size", exact=True).wait_for(timeout=30_000)
        page.wait_for_function(
            "document.querySelectorAll('input[aria-label=\"Run name\"]').length === 1", timeout=30_000
        )


def fill(page: Page, label: str, value: str) -> None:
    """Type into the text or number input labelled `label`."""
    box = page.get_by_label(label, exact=True)
    box.fill(value)
    box.press("Tab")


def pick(page: Page, label: str, option: str) -> None:
    """Choose `option` in the selectbox labelled `label`."""
    page.get_by_role("combobox", name=label).click()
    page.get_by_role("option", name=option, exact=True).click()


def wait_state(run_dir: Path, states: tuple[str, ...], timeout: float = 600) -> dict:
    """Poll status.json until the run is in one of `states`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = RunFolder(run_dir).status()
        if status.get("state") in states:
            return status
        time.sleep(0.5)
    raise TimeoutError(f"{run_dir.name} never reached {states}")


def start_mnist(
    page: Page, url: str, runs: Path, form: tuple[str, str, str], filled: Callable[[], None] | None = None
) -> Path:
    """Start a full Fashion-MNIST run from the form (form: its run name, optimizer and learning rate; `filled` is
    called before Start); returns its run directory."""
    name, optimizer, lr = form
    new_run_form(page, url, "mnist")
    fill(page, "Run name", name)
    pick(page, "Dataset", "fashion_mnist")
    pick(page, "Optimizer", optimizer)
    fill(page, "Learning rate", lr)
    page.get_by_text("Advanced settings").click()
    fill(page, "Steps per chunk", "50")
    fill(page, "Evaluate every (steps)", "500")
    pick(page, "W&B mode", "offline")
    if filled is not None:
        filled()
    before = set(runs.iterdir())
    page.get_by_role("button", name="Start run").click()
    page.wait_for_url("**/live?run=*", timeout=30_000)
    (run_dir,) = set(runs.iterdir()) - before
    return run_dir


def select_rows(page: Page, rows: list[int]) -> None:
    """Tick rows of the runs table (a canvas grid: click its row-marker column)."""
    grid = page.locator("[data-testid='stDataFrame']").first
    grid.wait_for(timeout=30_000)
    box = grid.bounding_box()
    assert box is not None
    for r in rows:
        page.mouse.click(box["x"] + 18, box["y"] + 35 * (r + 1) + 17)
        time.sleep(1.0)


def main() -> None:
    """Start the app and a browser, make the runs, save the screenshots."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=REPO / "test-artifacts" / "screenshots")
    ap.add_argument("--docs", action="store_true", help="also refresh docs/screenshot*.png")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="jaxdash-shots-"))
    runs = tmp / "runs"
    srv = start_server(runs, tmp / "streamlit.log", env={"WANDB_MODE": "offline"})
    shots: dict[str, Path] = {}

    def shot(page: Page, name: str, plots: int = 0) -> None:
        shots[name] = args.out / f"{name}.png"
        # Streamlit scrolls inside its main container, so full_page alone would cut the page at the viewport.
        height = page.evaluate("document.querySelector('[data-testid=\"stMain\"]')?.scrollHeight || 950")
        page.set_viewport_size({"width": VIEWPORT["width"], "height": max(VIEWPORT["height"], int(height) + 20)})
        time.sleep(0.5)
        if plots:  # a live refresh can catch a chart between its old and new element: wait for all of them
            try:
                page.wait_for_function(f"{PLOTS_DRAWN_JS} >= {plots}", timeout=30_000, polling=50)
            except PlaywrightTimeout:
                print(f"{name}: fewer than {plots} charts drawn after 30 s; taken as it is", flush=True)
        page.screenshot(path=str(shots[name]), full_page=True)
        page.set_viewport_size(VIEWPORT)
        print(f"saved {shots[name]}", flush=True)

    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            page = browser.new_page(viewport=VIEWPORT)
            time.sleep(5)  # the server's warm worker imports JAX meanwhile, as while a user reads the page

            # New run with a population: 3 learning rates x 2 seeds.
            new_run_form(page, srv.url, "regression")
            page.get_by_text("Population: train several variants at once").click()
            fill(page, "Learning rates", "0.0005, 0.002, 0.01")
            fill(page, "Seeds", "0, 1")
            fill(page, "Run name", "lr-sweep")
            fill(page, "Steps", "6000")
            pick(page, "W&B mode", "offline")
            page.get_by_role("button", name="Start population (6 runs)").wait_for(timeout=30_000)
            settle(page)
            shot(page, "new_run_population")

            # Live: the population's K fitted lines while it trains, then at the end.
            page.get_by_role("button", name="Start population (6 runs)").click()
            page.wait_for_url("**/live?run=*", timeout=30_000)
            page.get_by_text("varying lr, seed").first.wait_for(timeout=120_000)
            page.wait_for_function(
                f"(() => {{ const c = {PLOT_POINTS_JS}; return c.some(s => s.length >= 6 && s.every(n => n >= 20)); }})()",
                timeout=120_000,
            )
            settle(page, 0.5)
            shot(page, "live_population_running", plots=2)
            page.get_by_text("6 finished").wait_for(timeout=300_000)
            settle(page)
            shot(page, "live_population", plots=2)

            # Two Fashion-MNIST runs: watch the first train, then compare them and open its detail.
            form = ("fashion-adam", "adam", "0.001")
            first = start_mnist(page, srv.url, runs, form, lambda: shot(page, "new_run_mnist"))
            page.wait_for_function(
                f"(() => {{ const c = {PLOT_POINTS_JS}; return c.length >= 2 && c.some(s => s.some(n => n >= 40)); }})()",
                timeout=300_000,
            )
            settle(page, 0.5)
            shot(page, "live_mnist", plots=2)
            wait_state(first, ("finished", "failed", "stopped", "crashed"))
            second = start_mnist(page, srv.url, runs, ("fashion-sgd", "sgd", "0.05"))
            wait_state(second, ("finished", "failed", "stopped", "crashed"))
            time.sleep(1)

            page.goto(f"{srv.url}/runs")
            page.get_by_text("Select runs in the table").wait_for(timeout=60_000)
            select_rows(page, [0, 1])
            page.locator(".jaxdash-grid-controls").first.wait_for(timeout=30_000)
            page.wait_for_function(GRID_DRAWN_JS, timeout=30_000, polling=100)
            settle(page)
            shot(page, "compare")

            page.goto(f"{srv.url}/detail?run={first.name}")
            page.get_by_text("Confusion matrix").first.wait_for(timeout=60_000)
            settle(page, 2.0)
            shot(page, "detail_mnist", plots=4)
            browser.close()
    finally:
        srv.stop()
    if args.docs:
        for name, doc in (
            ("live_population_running", "screenshot"),
            ("live_mnist", "screenshot_mnist"),
            ("compare", "screenshot_compare"),
        ):
            if name in shots:
                shutil.copyfile(shots[name], REPO / "docs" / f"{doc}.png")
                print(f"docs/{doc}.png <- {shots[name].name}")
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
