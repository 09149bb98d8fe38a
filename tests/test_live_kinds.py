"""Live draws the histograms and texts a run logs while it trains (as W&B's and TensorBoard's live pages do),
in its prefix sections, in AppTest and in Chromium against the session's real server: a new text step shows
when the run's change events rerun the panel, without a reload."""

from __future__ import annotations

import re
import subprocess
import sys
import urllib.parse
from pathlib import Path

import pytest

from tests import client_scripts
from tests.apptest_pages import app
from tests.chart_elements import charts, figure

SCRIPT = """
import sys
import numpy as np
import jaxdash

run = jaxdash.init(project="kinds", id="hist__text=1, wd 0.1", name="hist-and-text", wandb="disabled",
                   tensorboard=False)  # an id with `__`, spaces and a comma: data, while the run trains
for step in range(3):
    run.log({"train/loss": 1.0 / (step + 1), "train/grads": jaxdash.Histogram(np.arange(20.0) * (step + 1)),
             "train/phase": "warmup"}, step=step)
print("logged", flush=True)
sys.stdin.readline()
run.log({"train/loss": 0.1, "train/grads": jaxdash.Histogram(np.arange(20.0)), "train/phase": "cooldown"}, step=3)
print("again", flush=True)
sys.stdin.readline()
run.finish()
"""


def _start(root: Path, tmp_path: Path) -> subprocess.Popen:
    env = client_scripts.script_env(root, WANDB_MODE="disabled")
    script = client_scripts.write(tmp_path, SCRIPT)
    proc = subprocess.Popen([sys.executable, str(script)], env=env, cwd=tmp_path, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)  # fmt: skip
    assert proc.stdout is not None and proc.stdout.readline().strip() == "logged"
    return proc


def _next(proc: subprocess.Popen, expect: str) -> None:
    proc.stdin.write("\n")  # type: ignore[union-attr]
    proc.stdin.flush()  # type: ignore[union-attr]
    assert proc.stdout.readline().strip() == expect  # type: ignore[union-attr]


def test_live_draws_a_training_runs_histogram_and_text(runs_root: Path, tmp_path: Path) -> None:
    proc = _start(runs_root, tmp_path)
    try:
        at = app("views/live.py", run=client_scripts.only_run(runs_root).name)
        texts = [t.value for t in at.text]
        assert "train/grads" in texts and "train/phase" in texts, texts  # the histogram and the text panel
        hist = [c for c in charts(at) if any(t.get("type") == "bar" for t in figure(c)["data"])]
        assert hist, "no histogram bars drawn"
        (phases,) = [h.proto.body for h in at.get("html") if "jaxdash-text-step" in h.proto.body]  # the text panel
        assert re.findall(r">step (\d+)</div><p>(\w+)</p>", phases) == [
            ("2", "warmup"),
            ("1", "warmup"),
            ("0", "warmup"),
        ]
        assert "**train · 2**" in [m.value for m in at.markdown]  # the histogram and the text (train/loss: Loss panel)
        _next(proc, "again")
    finally:
        proc.communicate("\n\n", timeout=60)  # whatever it waits for: its next step, then its end


@pytest.mark.browser
def test_live_shows_a_new_text_step_without_a_reload_in_chromium(served: tuple, tab: object, tmp_path: Path) -> None:
    srv, root = served
    proc = _start(root, tmp_path)
    try:
        run_id = client_scripts.only_run(root).name
        page = tab
        page.set_viewport_size({"width": 1400, "height": 2400})
        page.goto(f"{srv.url}/live?run={urllib.parse.quote(run_id)}")
        page.get_by_text("train/grads", exact=True).wait_for(timeout=60_000)  # the histogram panel
        page.get_by_text("train/phase", exact=True).first.wait_for(timeout=30_000)  # the text panel
        page.wait_for_function(
            "() => document.querySelectorAll('.js-plotly-plot .barlayer .point').length > 0", timeout=30_000
        )  # its bars drawn
        _next(proc, "again")
        # a rerun for the run's news (its records and media folders changed), at most every FED_RERUN_MS (20 s):
        # the histogram's step slider reaches the new step 3
        page.wait_for_function(
            "() => [...document.querySelectorAll('[data-testid=stSliderTickBar]')]"
            ".some(e => e.innerText.includes('3'))",
            timeout=60_000,
            polling=500,
        )
        page.screenshot(path=str(Path(__file__).resolve().parents[1] / "test-artifacts" / "live_kinds.png"))
    finally:
        proc.communicate("\n\n", timeout=60)  # whatever it waits for: its next step, then its end
