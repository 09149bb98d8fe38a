"""The Live page in a real browser: charts that never blink, lists that are never stale, a quick first point.

`streamlit run` + headless Chromium (Playwright) + real training runs; marked `browser`. The
numbers come from benchmarks/browser_probes.py, which benchmarks/dashboard_latency.py reports too.
"""

from __future__ import annotations

import shutil
import statistics
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchmarks import browser_probes as probes
from dashboard.serve import CHROMIUM, CHROMIUM_ARGS, Server, start_server
from training import run_store

playwright = pytest.importorskip("playwright.sync_api")
pytestmark = [pytest.mark.browser, pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"no Chromium at {CHROMIUM}")]
SHOTS = Path(__file__).resolve().parent.parent / "test-artifacts"


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[Server, Path]]:
    """The dashboard on a free port, with its own runs root and W&B off."""
    runs = tmp_path / "runs"
    runs.mkdir()
    srv = start_server(runs, tmp_path / "streamlit.log", env={"WANDB_MODE": "disabled"})
    yield srv, runs
    srv.stop()


@pytest.fixture
def browser() -> Iterator[object]:
    with playwright.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


def test_live_charts_never_fade_or_blank_while_a_cli_run_trains(
    server: tuple[Server, Path], browser: object, fashion_dir: Path
) -> None:
    srv, runs = server
    page = browser.new_page(viewport={"width": 1400, "height": 950})  # type: ignore[attr-defined]
    argv = ["mnist", "--dataset", "fashion_mnist", "--data-dir", str(fashion_dir), "--epochs", "4"]
    proc, run_dir = probes.cli_run(runs, argv)
    try:
        report = probes.watch_blinks(page, srv.url, run_dir, proc)
    finally:
        proc.kill()
    SHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SHOTS / "live_blink.png"), full_page=True)
    assert report.charts == 2 and report.samples >= 50, report
    assert report.fraction <= 0.01, report


def _lists_the_run(page: object, name: str, timeout_s: float) -> float:
    """Seconds until `name` shows on `page` (its text or a widget's value), without a reload."""
    t0 = time.monotonic()
    page.wait_for_function(  # type: ignore[attr-defined]
        "(n) => [document.body.innerText, ...Array.from(document.querySelectorAll('input'), i => i.value)]"
        ".some(t => t.includes(n))",
        arg=name,
        timeout=timeout_s * 1000,
        polling=100,
    )
    return time.monotonic() - t0


def test_a_cli_run_appears_ends_and_goes_on_every_page_without_a_reload(
    server: tuple[Server, Path], browser: object
) -> None:
    srv, runs = server
    pages = {}
    for path in ("/new", "/live", "/runs", "/detail"):
        pages[path] = browser.new_page(viewport={"width": 1400, "height": 950})  # type: ignore[attr-defined]
        pages[path].goto(srv.url + path)
        pages[path].get_by_text("No runs", exact=False).first.wait_for(timeout=60_000) if path != "/new" else None
    pages["/new"].get_by_role("button", name="Start run").wait_for(timeout=60_000)
    proc, run_dir = probes.cli_run(runs, ["regression", "--steps", "3000000", "--points", "4096"])
    try:
        while not (run_dir / "status.json").exists():
            time.sleep(0.05)
        seen = {path: _lists_the_run(p, run_dir.name[:12], 6) for path, p in pages.items()}
        assert max(seen.values()) <= 2.5, seen  # watcher every 1 s; a page rerun on top
        pages["/live"].get_by_role("button", name="Stop").wait_for(timeout=10_000)
        proc.terminate()  # the CLI run ends (stopped): Stop goes, the state shows
        pages["/live"].get_by_text("stopped").first.wait_for(timeout=5_000)
        pages["/live"].get_by_role("button", name="Stop").wait_for(state="detached", timeout=3_000)
        proc.wait(30)
        shutil.rmtree(run_dir)  # deleted from outside: gone from the lists (Live and Run detail say so)
        for path in ("/runs", "/new"):
            pages[path].wait_for_function(
                "(n) => !document.body.innerText.includes(n)", arg=run_dir.name[:12], timeout=5_000, polling=100
            )
        pages["/live"].get_by_text("No run", exact=False).first.wait_for(timeout=5_000)
    finally:
        proc.kill()


def test_first_point_within_a_second_of_start_on_a_warm_server(server: tuple[Server, Path], browser: object) -> None:
    srv, runs = server
    page = browser.new_page(viewport={"width": 1400, "height": 950})  # type: ignore[attr-defined]
    times = []
    for _ in range(3):
        page.goto(srv.url + "/new")
        start = page.get_by_role("button", name="Start run")
        start.wait_for(timeout=60_000)
        time.sleep(4)  # the warm worker is ready again (it imports JAX once the previous run settled)
        page.evaluate(probes.FIRST_POINT_JS, "train/loss")
        t_click = page.evaluate("Date.now()") / 1000
        start.click()
        page.wait_for_function("window.__firstDrawn !== null", timeout=60_000, polling=50)
        times.append(page.evaluate("window.__firstDrawn") / 1000 - t_click)
        for d in runs.iterdir():  # the next start on a quiet machine
            while run_store.read_status(d).get("state") in (None, "running"):
                time.sleep(0.2)
    assert statistics.median(times) <= 1.0, times
