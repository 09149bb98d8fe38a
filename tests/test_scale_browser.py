"""Big runs in Chromium against a real server: cached ahead of time, charts in time, the server small.

One metrics file of 1,000,000 records (benchmarks/scale.py's, written in seconds) copied into a
few finished runs. The server's background builder caches them with no page on them; then Live,
Run detail and compare open in fresh tabs (the better of two). The issue's targets are 2 s (Live,
Run detail, to the first chart), 3 s (compare) and 1 GB; benchmarks/scale.py measures them (fresh
tabs and in-app switches, against a bare Streamlit page). Wall-time bounds here are 3x the target
for Live and 5x for Run detail and compare: loose guards for a loaded CI machine, where a fresh tab
of a bare Streamlit page with one chart already takes 2.1-2.6 s here; each failure message carries
the load average to judge it by. The server's CPU time per open is bounded too: it hardly moves
with load, and a page that parsed the run instead of reading its cache would spend seconds more.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from benchmarks.scale import PeakRss, cached, costed, make_run, write_metrics
from dashboard.server.serve import Server, start_server
from runstore import run_folder

pytest.importorskip("playwright.sync_api")
pytestmark = [pytest.mark.browser, pytest.mark.slow]
RECORDS = 1_000_000
RUNS = 4  # compared together (the 10 cost this test ~40 s more of background caching, same page work)
ARTIFACTS = Path(__file__).resolve().parent.parent / "test-artifacts"


@pytest.fixture(scope="module")
def big_runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, list[Path], PeakRss]]:
    tmp = tmp_path_factory.mktemp("scale")
    root = tmp / "runs"
    root.mkdir()
    write_metrics(tmp / run_folder.RECORDS, RECORDS)
    runs = [make_run(root, f"big-{i}", tmp / run_folder.RECORDS, 0.001 * (i + 1)) for i in range(RUNS)]
    (tmp / run_folder.RECORDS).unlink()
    srv = start_server(root, tmp / "streamlit.log", env={"WANDB_MODE": "disabled", "JAXDASH_WARM_WORKER": "0"})
    rss = PeakRss(srv.proc.pid)
    rss.start()
    yield srv, runs, rss
    rss.stop.set()
    srv.stop()


def best_of_two(browser, url: str, server: psutil.Process, shot: str) -> dict[str, float]:
    """Seconds to the first chart with points and the CPU each side spent, the better of two fresh tabs."""
    got = []
    for _ in range(2):
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        got.append(costed(page, url, 1, server))
        page.screenshot(path=str(ARTIFACTS / shot))
        page.close()
    return min(got, key=lambda g: g["first"])


def test_big_runs_are_cached_without_a_page_then_open_in_time(big_runs, chromium) -> None:  # noqa: ANN001
    srv, runs, rss = big_runs
    ARTIFACTS.mkdir(exist_ok=True)
    browser = chromium
    page = browser.new_page()
    page.goto(f"{srv.url}/runs")  # any page starts the server's run watcher, which queues the runs
    page.wait_for_selector("[data-testid=stDataFrame] canvas", timeout=60_000)
    page.close()
    deadline = time.monotonic() + 300
    while not all(cached(d) for d in runs) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert all(cached(d) for d in runs), "the background builder did not cache the runs within 300 s"
    server = psutil.Process(srv.proc.pid)
    live = best_of_two(browser, f"{srv.url}/live?run={runs[0].name}", server, "scale_live.png")
    detail = best_of_two(browser, f"{srv.url}/detail?run={runs[1].name}", server, "scale_detail.png")
    ids = ",".join(d.name for d in runs)
    compare = best_of_two(browser, f"{srv.url}/runs?compare={ids}", server, "scale_compare.png")
    got = "; ".join(
        f"{name} {g['first']:.2f} s (CPU: page {g['page_cpu']:.2f} s, server {g['server_cpu']:.2f} s)"
        for name, g in (("Live", live), ("Run detail", detail), (f"compare of {RUNS}", compare))
    )
    got += f"; load average {os.getloadavg()}"
    assert live["first"] <= 3 * 2.0 and detail["first"] <= 5 * 2.0 and compare["first"] <= 5 * 3.0, got
    assert live["server_cpu"] <= 2.0 and detail["server_cpu"] <= 3.0 and compare["server_cpu"] <= 4.0, got
    assert rss.peak < 2**30, f"server peak RSS {rss.peak / 2**20:.0f} MB; {got}"
    print(got)


def _wait_resting(server: psutil.Process, timeout: float = 60) -> None:
    """Until the server spends under a tenth of a second of CPU in half a second: nothing of the page's is
    being worked on."""
    deadline, spent = time.monotonic() + timeout, sum(server.cpu_times()[:2])
    while True:
        time.sleep(0.5)
        last, spent = spent, sum(server.cpu_times()[:2])
        if spent - last < 0.1:
            return
        assert time.monotonic() < deadline, f"the server was still busy after {timeout:.0f} s"


def test_csv_download_of_a_big_run_streams_every_record(big_runs, tmp_path: Path, tab) -> None:  # noqa: ANN001
    """Run detail's "Metrics CSV" link: dashboard/server_app.py's route writes the CSV as it sends it,
    so the server grows by what one part (~4 MB of records) takes, not by the 70 MB file."""
    srv, runs, _ = big_runs
    page = tab
    page.set_viewport_size({"width": 1400, "height": 1000})
    page.goto(f"{srv.url}/detail?run={runs[2].name}")
    link = page.get_by_role("link", name="Metrics CSV")
    link.wait_for(timeout=60_000)
    page.wait_for_function("() => !document.querySelector('[data-testid=stStatusWidget]')", timeout=60_000)
    _wait_resting(psutil.Process(srv.proc.pid))  # the page's own work done: what grows from here is the download's
    before = psutil.Process(srv.proc.pid).memory_info().rss
    during = PeakRss(srv.proc.pid)
    during.start()
    with page.context.expect_event("download", timeout=120_000) as info:
        link.click()  # opens a tab that the download replaces
    path = tmp_path / "metrics.csv"
    info.value.save_as(path)  # before the context closes: that deletes its downloads
    during.stop.set()
    during.join()
    with open(path, "rb") as f:
        header = f.readline().decode().strip().split(",")
        rows = sum(1 for _ in f)
    assert rows == RECORDS and header[:3] == ["step", "wall", "ts"] and "test/acc" in header
    assert path.stat().st_size > 60 * 2**20
    grew = (during.peak - before) / 2**20
    # Measured 27 MB (a part, its CSV text and pyarrow's pool); a download button holds the whole 70 MB file.
    assert grew < 50, f"the server grew by {grew:.0f} MB while sending a {path.stat().st_size / 2**20:.0f} MB CSV"
