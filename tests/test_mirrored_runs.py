"""Runs we did not start (client runs, TensorBoard logdirs) in a real server and Chromium: ids are data, never code.

A run id holding `__` (Keras' train/validation sub-runs, `add_scalars`, `jaxdash.init(name="adam__lr1e-3")`)
once broke Live and Run detail: Streamlit's v2 components refuse a key with `__`, and the run id was in the key.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from dashboard.server.serve import CHROMIUM, CHROMIUM_ARGS, Server, start_server
from tests.apptest_pages import fake_run

playwright = pytest.importorskip("playwright.sync_api")
pytestmark = [pytest.mark.browser, pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"no Chromium at {CHROMIUM}")]
# Points drawn per plotly chart on the page.
DRAWN_JS = "Array.from(document.querySelectorAll('.js-plotly-plot')).map(g => (g.calcdata || []).length)"
BROKEN = ("BidiComponentInvalidIdError", "delimiter sequence", "Traceback", "Something went wrong")


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[Server, Path]]:
    """The dashboard on a free port, with its own runs root and W&B off."""
    runs = tmp_path / "runs"
    runs.mkdir()
    srv = start_server(runs, tmp_path / "streamlit.log", env={"WANDB_MODE": "disabled", "JAXDASH_WARM_WORKER": "0"})
    yield srv, runs
    srv.stop()


def test_a_run_id_with_double_underscore_opens_live_and_run_detail(server: tuple[Server, Path]) -> None:
    srv, runs = server
    run = fake_run(runs, "regression", "finished", name="adam__lr1e-3")
    assert "__" in run.name
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            for path in ("live", "detail"):
                page.goto(f"{srv.url}/{path}?run={run.name}")
                page.wait_for_function(f"{DRAWN_JS}.some(n => n > 0)", timeout=60_000, polling=100)
                body = page.inner_text("body")
                assert not any(b in body for b in BROKEN), (path, body[:2000])
        finally:
            browser.close()
