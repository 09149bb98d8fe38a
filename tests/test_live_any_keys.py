"""The Live page in Chromium against a real server, for runs of users' own loops (the `jaxdash` client)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from benchmarks import browser_probes
from dashboard.server.serve import TEST_CHROMIUM, Server
from tests import client_scripts
from tests.apptest_pages import fake_run

pytest.importorskip("playwright.sync_api")
pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not Path(TEST_CHROMIUM).exists(), reason=f"no Chromium at {TEST_CHROMIUM}"),
]

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


def test_live_follows_a_client_run_started_after_the_page_opened(server: tuple[Server, Path], tab: Any) -> None:
    srv, runs = server
    old = fake_run(runs, "regression", "finished", name="the-old-one")
    script = None
    try:
        tab.goto(f"{srv.url}/live")  # no run picked: the newest
        tab.wait_for_function(SHOWS, arg=old.name, timeout=60_000, polling=100)
        env = client_scripts.script_env(runs, WANDB_MODE="disabled")
        script = subprocess.Popen(
            [sys.executable, "-c", TRAINING], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        assert script.stdout is not None and script.stdout.readline().strip() == "logged"
        tab.wait_for_function(SHOWS, arg="started-later", timeout=15_000, polling=100)  # no reload
        assert "run=" not in tab.url or "started-later" in tab.url
    finally:
        if script is not None:
            script.communicate("\n", timeout=60)


KEYS_SCRIPT = """
import sys
import jaxdash
keys = [f"train/k{i}" for i in range(8)] + [f"eval/k{i}" for i in range(7)] + [f"opt/k{i}" for i in range(5)]
run = jaxdash.init(project="own-loop", name="many-keys")
for step in range(5):
    run.log({k: step + i for i, k in enumerate(keys)}, step=step)
print("logged", flush=True)
sys.stdin.readline()
run.log({"late/new_key": 1.0}, step=5, commit=True)
print("late", flush=True)
sys.stdin.readline()
run.finish()
"""
# Titles of the charts on the page that have drawn points.
DRAWN = f"() => {browser_probes.DRAWN_CHARTS_JS}.map(c => c.title)"


def test_live_charts_every_key_of_a_client_run_in_sections_by_prefix(
    server: tuple[Server, Path], chromium: Any
) -> None:
    srv, runs = server
    env = client_scripts.script_env(runs, WANDB_MODE="disabled")
    script = subprocess.Popen(
        [sys.executable, "-c", KEYS_SCRIPT], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    context = chromium.new_context(viewport={"width": 1400, "height": 6000})  # every lazy chart in view
    try:
        assert script.stdout is not None and script.stdout.readline().strip() == "logged"
        run_id = client_scripts.only_run(runs).name
        page = context.new_page()
        page.goto(f"{srv.url}/live?run={run_id}")
        page.wait_for_function(f"({DRAWN})().length >= 20", timeout=60_000, polling=100)
        titles = page.evaluate(DRAWN)
        assert sorted(t for t in titles if "/" in t) == sorted(
            [f"train/k{i}" for i in range(8)] + [f"eval/k{i}" for i in range(7)] + [f"opt/k{i}" for i in range(5)]
        )
        body = page.inner_text("body")
        assert body.index("train · 8") < body.index("eval · 7") < body.index("opt · 5")  # first-appearance order
        script.stdin.write("\n")  # type: ignore[union-attr]
        script.stdin.flush()  # type: ignore[union-attr]
        assert script.stdout.readline().strip() == "late"
        # no reload: a new key is news of its own (status.json's "keys", an event of changes_route)
        # Its panel within a second or so (0.6-0.8 s seen), not at the panel's next rerun for records (every
        # 20 s while its charts are fed: 17.3 s seen before status.json counted keys); 3 s for a loaded machine.
        page.wait_for_function(f"({DRAWN})().includes('late/new_key')", timeout=3_000, polling=100)
    finally:
        context.close()
        script.communicate("\n", timeout=60)
