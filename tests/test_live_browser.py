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
from typing import Any

import psutil
import pytest

from benchmarks import browser_probes as probes
from dashboard.server.serve import Server, start_server
from runstore import run_store
from runstore.run_folder import RunFolder

pytest.importorskip("playwright.sync_api")
pytestmark = pytest.mark.browser
SHOTS = Path(__file__).resolve().parent.parent / "test-artifacts"
IDLE_JS = "() => !document.querySelector('[data-testid=stStatusWidget]')"  # no script run under way


def test_live_charts_never_fade_or_blank_while_a_cli_run_trains(
    server: tuple[Server, Path], tab: Any, fashion_dir: Path
) -> None:
    srv, runs = server
    page = tab
    # A run longer than it is watched: 8 s of samples every 100 ms (>= 50 scored on a loaded machine), then it is killed.
    argv = ["mnist", "--dataset", "fashion_mnist", "--data-dir", str(fashion_dir), "--epochs", "30"]
    proc, run_dir = probes.cli_run(runs, argv)
    try:
        report = probes.watch_blinks(page, srv.url, run_dir, proc, watch_s=8.0)
    finally:
        proc.kill()
    SHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SHOTS / "live_blink.png"), full_page=True)
    print(report)  # pytest -s: the figures for the note
    assert report.charts == 2 and report.samples >= 50, report
    assert report.fraction <= 0.01, report


def _seconds_until(page: object, js: str, arg: str, timeout_s: float) -> float:
    """Seconds until `js(arg)` holds on `page`, without a reload."""
    t0 = time.monotonic()
    page.wait_for_function(js, arg=arg, timeout=timeout_s * 1000, polling=100)  # type: ignore[attr-defined]
    return time.monotonic() - t0


HAS = "(t) => document.body.innerText.includes(t)"
LIST_BOUND_S = (
    6.0  # goal 2 s, measured by benchmarks/dashboard_latency.py; a guard against a stalled list on a slow CI machine
)
HAS_NOT = "(t) => !document.body.innerText.includes(t)"


@pytest.mark.parametrize("path", ["/new", "/live", "/runs", "/detail"])
def test_a_cli_run_appears_ends_and_goes_without_a_reload(server: tuple[Server, Path], tab: Any, path: str) -> None:
    srv, runs = server
    page = tab
    page.goto(srv.url + path)
    page.get_by_text("Start run" if path == "/new" else "No runs", exact=False).first.wait_for(timeout=60_000)
    page.wait_for_function(IDLE_JS, timeout=60_000, polling=100)  # the page has settled
    proc, run_dir = probes.cli_run(runs, ["regression", "--steps", "3000000", "--points", "4096"])
    try:
        while not RunFolder(run_dir).status_path.exists():
            time.sleep(0.05)
        # "Training now" on New run; the run instead of "No runs" on the others (the Runs table is a canvas).
        appeared = _seconds_until(page, *((HAS, "Training now") if path == "/new" else (HAS_NOT, "No runs")), 10)
        # The goal is 2 s (runs polled every 0.25 s, pages check every 0.5 s: 1.0-2.0 s seen here); the
        # bound leaves room for a loaded CI machine, where a page's rerun itself can take a second.
        print(f"{path}: the run showed after {appeared:.2f} s")  # pytest -s: the figures for the note
        assert appeared <= LIST_BOUND_S, appeared
        if path == "/live":
            page.get_by_role("button", name="Stop").wait_for(timeout=10_000)
        proc.terminate()  # the CLI run ends (stopped): the state shows and Stop goes, without a reload
        proc.wait(30)
        if path == "/new":
            assert _seconds_until(page, HAS_NOT, "Training now", 10) <= LIST_BOUND_S
        if path == "/live":
            page.get_by_text("stopped").first.wait_for(timeout=5_000)
            page.get_by_role("button", name="Stop").wait_for(state="detached", timeout=3_000)
        shutil.rmtree(run_dir)  # deleted from outside: gone from the lists
        if path in ("/runs", "/live", "/detail"):
            gone = _seconds_until(page, HAS, "No run", 10)
            print(f"{path}: the deleted run went after {gone:.2f} s")
            assert gone <= LIST_BOUND_S, gone
        SHOTS.mkdir(exist_ok=True)
        page.screenshot(path=str(SHOTS / f"never_stale_{path.strip('/')}.png"))
    finally:
        proc.kill()


@pytest.fixture
def warm_server(tmp_path: Path) -> Iterator[tuple[Server, Path]]:
    """A dashboard of its own with a warm worker (the session's server has none): (server, runs root)."""
    runs = tmp_path / "runs"
    runs.mkdir()
    srv = start_server(runs, tmp_path / "streamlit.log", env={"WANDB_MODE": "disabled", "JAXDASH_WARM_WORKER": "1"})
    yield srv, runs
    srv.stop()


def _workers(srv: Server) -> list[psutil.Process]:
    """The server's live `python -m training worker` children (one that took a job runs it under the same
    command line: its run has ended before this is asked)."""
    out = []
    for child in psutil.Process(srv.proc.pid).children():
        try:
            if child.cmdline()[-2:] == ["training", "worker"] and child.status() != psutil.STATUS_ZOMBIE:
                out.append(child)
        except psutil.Error:  # exited meanwhile
            continue
    return out


def _said_ready(worker: psutil.Process) -> bool:
    """Whether the worker said "ready": it rehearses (training/runs/rehearsal.py catches SIGUSR1 meanwhile, to
    give way to a Start at once), or it rehearsed and sleeps on its stdin."""
    try:
        status = open(f"/proc/{worker.pid}/status").read()
        caught = int(next(line.split()[1] for line in status.splitlines() if line.startswith("SigCgt:")), 16)
        return (
            bool(caught & (1 << (10 - 1))) or worker.status() == psutil.STATUS_SLEEPING and not worker.cpu_percent(0.3)
        )
    except (OSError, psutil.Error):
        return False


def _wait_worker_ready(srv: Server, timeout_s: float = 120) -> None:
    """Until the server's one warm worker has imported everything and said "ready"."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        workers = _workers(srv)
        if len(workers) == 1 and _said_ready(workers[0]):
            return
        time.sleep(0.1)
    raise AssertionError(f"no warm worker ready within {timeout_s} s: {_workers(srv)}")


def test_first_point_within_a_second_of_start_on_a_warm_server(warm_server: tuple[Server, Path], tab: Any) -> None:
    """Start -> first point: <= 10 s for the server's first Start (a cold process importing JAX: an idle
    server keeps no warm worker), then, from the worker that first Start left behind, a median within 3 s.

    The goal is a 1 s median, measured by benchmarks/dashboard_latency.py (a) (0.78-1.01 s at load
    3-4 on an earlier day). This test shares the 2 cores with pytest and Chromium; on 2026-11-24 the
    machine ran the suite at half its earlier speed and the unchanged code measured medians of
    1.69-1.87 s here, so the test guards against a stalled first point, not the goal.
    """
    srv, runs = warm_server
    page = tab
    times, via = [], []
    for i in range(4):
        page.goto(srv.url + "/new")
        start = page.get_by_role("button", name="Start run")
        start.wait_for(timeout=60_000)
        if i:
            _wait_worker_ready(srv)  # the warm worker is ready (it imports JAX once the previous run settled)
        else:
            assert not _workers(srv), "a server that has launched nothing keeps no warm worker"
        before = set(run_store.run_folders(runs))
        page.evaluate(probes.FIRST_POINT_JS, "train/loss")
        t_click = page.evaluate("Date.now()") / 1000
        start.click()
        page.wait_for_function("window.__firstDrawn !== null", timeout=60_000, polling=50)
        times.append(page.evaluate("window.__firstDrawn") / 1000 - t_click)
        (run_dir,) = set(run_store.run_folders(runs)) - before
        via.append((run_store.read_json(RunFolder(run_dir).launch_path) or {}).get("via"))
        while RunFolder(run_dir).status().get("state") in (None, "running"):  # the next start on a quiet machine
            time.sleep(0.2)
    print("Start -> first point:", ", ".join(f"{t:.2f}" for t in times), "s")  # pytest -s: the figures for the note
    assert via == ["cold"] + ["worker"] * (len(via) - 1), via  # every later Start found the warm worker ready
    assert times[0] <= 10.0, times  # a fresh server's first Start: a cold process imports JAX
    assert statistics.median(times[1:]) <= 3.0, times


# The Live panel's refresh trigger (static/stream/trigger.js): watching its runs (`stop` undoes the watch), or
# placed with on=False (a hidden tab's panel): no watch.
FOLLOWED_JS = "() => window.__jaxdashTrigger?.triggers?.refresh_trigger?.stop instanceof Function"
UNFOLLOWED_JS = "() => window.__jaxdashTrigger?.triggers?.refresh_trigger?.stop === null"
SHOW_JS = """() => {
  Object.defineProperty(document, "visibilityState", {get: () => "visible", configurable: true});
  Object.defineProperty(document, "hidden", {get: () => false, configurable: true});
  document.dispatchEvent(new Event("visibilitychange"));
}"""


def test_a_hidden_live_tab_stops_refreshing_and_catches_up_when_shown(server: tuple[Server, Path], tab: Any) -> None:
    from benchmarks.dashboard_latency import fake_running_run
    from benchmarks.page_cost import HIDE_JS

    srv, runs = server
    run_dir = fake_running_run(runs)
    page = tab
    page.goto(f"{srv.url}/live?run={run_dir.name}")
    page.get_by_role("button", name="Stop").wait_for(timeout=60_000)
    RunFolder(run_dir).append_records([{"step": 1, "wall": 1.0, "ts": time.time(), "train/loss": 0.4321}])
    assert _seconds_until(page, HAS, "0.4321", 10) <= LIST_BOUND_S  # visible: the tile follows the run
    page.wait_for_function(FOLLOWED_JS, timeout=30_000)  # the visible tab's panel follows its run
    page.evaluate(HIDE_JS)
    # The tab reports it is hidden: the page reruns once, its panel's trigger placed without following its run.
    page.wait_for_function(UNFOLLOWED_JS, timeout=30_000, polling=50)
    page.wait_for_function(IDLE_JS, timeout=30_000, polling=100)
    RunFolder(run_dir).append_records([{"step": 2, "wall": 2.0, "ts": time.time(), "train/loss": 0.1234}])
    page.wait_for_timeout(2000)  # eight of the trigger's polls' worth
    assert "0.1234" not in page.evaluate("document.body.innerText")  # hidden: no refresh at all
    page.evaluate(SHOW_JS)
    assert _seconds_until(page, HAS, "0.1234", 10) <= LIST_BOUND_S  # shown: the newest values at once
    RunFolder(run_dir).write_status(state="stopped", ended=time.time())


# The width each line chart's plot is drawn at (0 while not drawn).
CHART_WIDTHS = (
    "() => Array.from(document.querySelectorAll('.jaxdash-line'))"
    ".map(d => d.__chart && d.__chart.plot ? d.__chart.plot.width : 0)"
)


def test_a_chart_follows_its_column_when_the_column_narrows_or_widens(server: tuple[Server, Path], tab: Any) -> None:
    """A chart whose column changes width (the page's layout changing as a run ends) follows its column, not
    only the window: not clipped and not left short."""
    srv, runs = server
    proc, run_dir = probes.cli_run(runs, ["regression", "--steps", "200"])
    proc.wait(120)
    page = tab
    page.goto(f"{srv.url}/live?run={run_dir.name}")
    page.wait_for_function(f"() => ({CHART_WIDTHS})().filter(w => w > 0).length >= 2", timeout=60_000)  # fit, loss
    before = page.evaluate(CHART_WIDTHS)
    page.evaluate("() => { for (const d of document.querySelectorAll('.jaxdash-line')) d.style.width = '420px'; }")
    page.wait_for_function(f"() => ({CHART_WIDTHS})().every(w => w === 0 || w === 420)", timeout=5_000)
    page.evaluate("() => { for (const d of document.querySelectorAll('.jaxdash-line')) d.style.width = ''; }")
    page.wait_for_function(
        f"(b) => JSON.stringify(({CHART_WIDTHS})()) === JSON.stringify(b)", arg=before, timeout=5_000
    )
    assert max(before) > 420
