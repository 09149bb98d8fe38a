"""A tensorboardX script writing into the --logdir while the Live page is open: its new points show live;
and a hostile logdir (a crafted 2 GiB event file, a FIFO) costs its own rows only, with the server's memory bounded.

A real server (dashboard/server/serve.py) with JAXDASH_LOGDIR, headless Chromium, and tensorboardX writing
in this process; the chart's points are read from the plotly graph in the page. Marked `browser`.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tensorboardX import SummaryWriter

from benchmarks import browser_probes
from dashboard.server.serve import Server, start_server
from runstore import tb_logdir
from tests.test_safety_logdir import EVENTS, crafted

pytest.importorskip("playwright.sync_api")
pytestmark = pytest.mark.browser
SHOTS = Path(__file__).resolve().parent.parent / "test-artifacts"
LIVE_BOUND_S = 10.0  # a guard against a stalled page on a busy 2-core machine; a refresh is every 0.5 s

# How many points the chart of `tag` holds now (-1 while it is not drawn).
POINTS = (
    "(tag) => { for (const [c, s, title] of ("
    + browser_probes.CHARTS_JS
    + ")()) if (title === tag && s && s[0]) return s[0].n; return -1; }"
)


@pytest.fixture(scope="module")
def logdir_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, Path]]:
    """The dashboard on an empty runs root, reading a TensorBoard logdir, for this module (a server of its
    own: the session's reads no logdir, and its peak memory is this module's to bound). Each test writes
    runs of its own names there."""
    tmp = tmp_path_factory.mktemp("logdir-server")
    runs, logs = tmp / "runs", tmp / "logs"
    runs.mkdir()
    logs.mkdir()
    env = {"WANDB_MODE": "disabled", "JAXDASH_WARM_WORKER": "0", "JAXDASH_LOGDIR": str(logs)}
    srv = start_server(runs, tmp / "streamlit.log", env=env)
    yield srv, logs
    srv.stop()


def _wait_points(page: object, tag: str, at_least: int) -> float:
    """Seconds until the chart of `tag` shows `at_least` points, without a reload."""
    t0 = time.monotonic()
    js = f"(tag) => ({POINTS})(tag) >= {at_least}"
    page.wait_for_function(js, arg=tag, timeout=LIVE_BOUND_S * 1000, polling=100)  # type: ignore[attr-defined]
    return time.monotonic() - t0


def test_tensorboardx_points_written_while_the_page_is_open_show_live(
    logdir_server: tuple[Server, Path], tab: Any
) -> None:
    srv, logs = logdir_server
    writer = SummaryWriter(str(logs / "tbx_live"), flush_secs=0.1)
    for step in range(3):
        writer.add_scalar("train_loss", 1.0 / (step + 1), step)
    writer.flush()
    try:
        page = tab
        page.goto(f"{srv.url}/live?run=tbx_live")
        _wait_points(page, "train_loss", 3)
        for step in range(3, 10):  # the script goes on while the page is open
            writer.add_scalar("train_loss", 1.0 / (step + 1), step)
        writer.flush()
        seconds = _wait_points(page, "train_loss", 10)
        assert page.evaluate(POINTS, "train_loss") == 10
        assert "TensorBoard log" in page.inner_text("body") or "running" in page.inner_text("body")
        SHOTS.mkdir(exist_ok=True)
        page.screenshot(path=str(SHOTS / "logdir_live.png"), full_page=True)
        print(f"new tensorboardX points on the open Live page after {seconds:.2f} s")
    finally:
        writer.close()


RSS_BOUND = 2**30  # the server's peak resident memory with a crafted 2 GiB event file in the logdir
BROKEN = ("Something went wrong", "Traceback", "MemoryError")


def _peak_rss(pid: int) -> int:
    """The process's peak resident memory in bytes (VmHWM)."""
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmHWM for {pid}")


def test_pages_draw_next_to_a_crafted_event_file_and_a_fifo_with_memory_bounded(
    logdir_server: tuple[Server, Path], tab: Any
) -> None:
    """A 2 GiB sparse event file claiming a 1.9 GB record, one claiming 2**62 bytes and a FIFO named like an event
    file sit next to a good run: the good run draws all its points, each bad run says why on its page, the Runs
    page draws, and the server never holds 1 GB."""
    srv, logs = logdir_server
    crafted(logs / "crafted" / EVENTS, 1_900_000_000, size=2**31)
    crafted(logs / "huge" / EVENTS, 2**62)
    (logs / "fifo").mkdir()
    os.mkfifo(logs / "fifo" / EVENTS)
    writer = SummaryWriter(str(logs / "tbx_good"))
    for step in range(12):
        writer.add_scalar("train_loss", 1.0 / (step + 1), step)
    writer.close()
    checks = [
        ("/runs", "Runs & compare"),
        ("/live?run=crafted", "claims 1,900,000,000 bytes, over the 32 MiB limit"),
        (f"/live?run={tb_logdir.mirror_id('huge')}", "claims 4,611,686,018,427,387,904 bytes"),
        ("/live?run=fifo", "not a regular file"),
    ]
    page = tab
    page.goto(f"{srv.url}/live?run=tbx_good")
    _wait_points(page, "train_loss", 12)
    for url, expected in checks:
        page.goto(srv.url + url)
        page.get_by_text(expected).first.wait_for(timeout=LIVE_BOUND_S * 1000)
        body = page.inner_text("body")
        assert not any(b in body for b in BROKEN), (url, body[:2000])
    page.goto(f"{srv.url}/live?run=tbx_good")  # still drawn after the bad runs were shown
    _wait_points(page, "train_loss", 12)
    peak = _peak_rss(srv.proc.pid)
    print(f"server peak RSS with a crafted 2 GiB event file and a FIFO in the logdir: {peak / 2**20:.0f} MiB")
    assert peak < RSS_BOUND, f"server peak RSS {peak / 2**20:.0f} MiB"
