"""A sweep started from the New run page, in headless Chromium: Enter starts nothing; a click on
Start sweep queues it, and the Sweeps page shows its trials running and finished without a reload,
with the parallel-coordinates view."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dashboard.server.serve import TEST_CHROMIUM, Server, start_server
from settings.queue.store import Queue
from tests.fixtures_runs import hold_env, release

pytest.importorskip("playwright.sync_api")
pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.skipif(not Path(TEST_CHROMIUM).exists(), reason=f"no Chromium at {TEST_CHROMIUM}"),
]


IDLE_JS = "() => !document.querySelector('[data-testid=stStatusWidget]')"  # no script run under way
# Every websocket message the page sends, as text (protobuf keeps a widget's string value as it is).
SENT_JS = """(() => {
  window.__wsSent = [];
  const send = WebSocket.prototype.send;
  WebSocket.prototype.send = function (data) {
    const bytes = typeof data === "string" ? null : new Uint8Array(data.buffer || data);
    window.__wsSent.push(bytes ? new TextDecoder("latin1").decode(bytes) : data);
    return send.call(this, data);
  };
})()"""


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[Server, Path]]:
    """The page's server; the first training process it starts waits after its second chunk (`held`)."""
    runs = tmp_path / "runs"
    env = hold_env({"WANDB_MODE": "disabled"}, tmp_path / "held", chunks=1)
    srv = start_server(runs, tmp_path / "streamlit.log", env=env)
    yield srv, runs
    srv.stop()


def test_sweep_from_the_page_shows_its_trials_live(server: tuple[Server, Path], tab: Any) -> None:
    srv, runs = server
    page = tab
    page.set_viewport_size({"width": 1400, "height": 1200})
    page.add_init_script(SENT_JS)
    try:
        page.goto(f"{srv.url}/sweeps")  # its first render imports Optuna's figures: not while trials train
        page.get_by_text("No sweeps yet", exact=False).first.wait_for(timeout=90_000)
        page.goto(srv.url)
        page.get_by_text("Sweep: many runs").click(timeout=90_000)  # the toggle
        page.get_by_role("textbox", name="Swept settings").fill("lr=0.01,0.03,0.1")
        fixed = page.get_by_role("textbox", name="Fixed settings")
        fixed.fill("steps=2000 log_every=100")  # the first population is held: the page sees the third wait
        fixed.press("Enter")  # Enter keeps the value; it must not start anything
        page.get_by_role("textbox", name="Study name").fill("browser-sweep")
        page.get_by_role("textbox", name="Study name").press("Enter")
        # The page sent the server the rerun Enter asks for, with the name (the page's timers rerun it too).
        page.wait_for_function("window.__wsSent.some((m) => m.includes('browser-sweep'))", timeout=30_000)
        page.wait_for_function(IDLE_JS, timeout=60_000, polling=100)
        page.wait_for_timeout(3000)  # a sweep that Enter started would be in the queue by now
        assert not (runs / "queue.db").exists() or not Queue(runs).jobs()
        page.get_by_role("button", name="Start sweep").click()
        page.wait_for_url("**/sweeps?study=browser-sweep", timeout=30_000)
        # 3 lr values, 2 at once: one trial waits while a population of two trains
        page.get_by_text("queued 1", exact=False).first.wait_for(timeout=120_000)
        page.get_by_text("running 2", exact=False).first.wait_for(timeout=120_000)
        release(runs.parent / "held")
        page.get_by_text("finished 3 of 3 trials", exact=False).first.wait_for(timeout=240_000)
        # the trials' parallel coordinates: plotly.js draws them after the text saying the trials finished
        page.locator(".js-plotly-plot .parcoords").first.wait_for(state="attached", timeout=30_000)
    finally:
        page.screenshot(path=str(runs.parent / "sweep.png"))
    (job,) = Queue(runs).jobs()
    assert job["label"] == "sweep browser-sweep"
