"""The Live page in Chromium against a real server, for runs of users' own loops (the `jaxdash` client)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from dashboard.server.serve import CHROMIUM, CHROMIUM_ARGS, start_server
from tests import client_scripts
from tests.apptest_pages import fake_run

playwright = pytest.importorskip("playwright.sync_api")
pytestmark = [pytest.mark.browser, pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"no Chromium at {CHROMIUM}")]

# The run the Live page shows: its picker's value ("name · task · id").
SHOWS = "(t) => (document.querySelector('[data-testid=stSelectbox] input') || {}).value?.includes(t)"
TRAINING = """
import sys
import jaxdash
run = jaxdash.init(project="own-loop", name="started-later")
run.log({"train/step_loss": 1.0}, step=0)
print("logged", flush=True)
sys.stdin.readline()  # trains until told to stop
run.finish()
"""


def test_live_follows_a_client_run_started_after_the_page_opened(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    old = fake_run(runs, "regression", "finished", name="the-old-one")
    srv = start_server(runs, tmp_path / "streamlit.log", env={"WANDB_MODE": "disabled", "JAXDASH_WARM_WORKER": "0"})
    script = None
    try:
        with playwright.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(f"{srv.url}/live")  # no run picked: the newest
            page.wait_for_function(SHOWS, arg=old.name, timeout=60_000, polling=100)
            env = client_scripts.script_env(runs, WANDB_MODE="disabled")
            script = subprocess.Popen(
                [sys.executable, "-c", TRAINING], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
            )
            assert script.stdout is not None and script.stdout.readline().strip() == "logged"
            page.wait_for_function(SHOWS, arg="started-later", timeout=15_000, polling=100)  # no reload
            assert "run=" not in page.url or "started-later" in page.url
            browser.close()
    finally:
        srv.stop()
        if script is not None:
            script.communicate("\n", timeout=60)
