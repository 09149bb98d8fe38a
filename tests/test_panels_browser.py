"""Run detail's per-key panels in Chromium against the session's real server: a section per prefix, the filter
box, and a section closed by a click kept in the project's layout file."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from runstore import layout_prefs
from tests import client_scripts
from tests.test_panels_from_data import SCRIPT

pytestmark = pytest.mark.browser
ARTIFACTS = Path(__file__).resolve().parents[1] / "test-artifacts"
SECTION = "[data-testid=stExpander] summary"


def test_sections_filter_and_a_closed_section_in_chromium(served: tuple, tab: object, tmp_path: Path) -> None:
    srv, root = served
    script = client_scripts.write(tmp_path, SCRIPT)
    env = client_scripts.script_env(root, WANDB_MODE="disabled")
    out = subprocess.run(
        [sys.executable, str(script)], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr
    run = client_scripts.only_run(root)
    page = tab
    page.goto(f"{srv.url}/detail?run={run.name}")
    labels = "() => [...document.querySelectorAll('" + SECTION + "')].map(e => e.innerText.split('\\n').pop())"
    want = ["train · 3", "eval · 2", "opt · 2"]
    page.wait_for_function(f"({labels})().filter(t => t.includes(' · ')).length >= 3", timeout=60_000, polling=200)
    assert [t for t in page.evaluate(labels) if " · " in t] == want
    page.get_by_text("eval/frame", exact=True).wait_for(timeout=30_000)  # the image panel, drawn in its section
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "panels_from_data_detail.png"), full_page=True)
    page.get_by_text("train · 3").click()  # close the train section
    layout = root / layout_prefs.LAYOUT_FILE
    page.wait_for_function(
        "() => !document.body.innerText.includes('train/grads')", timeout=30_000, polling=200
    )  # its histogram panel is gone
    assert json.loads(layout.read_text())["projects"]["keys"]["collapsed"] == ["train"]
    box = page.get_by_label("Filter panels")
    box.fill("frame")
    box.press("Enter")
    page.wait_for_function(f"({labels})().filter(t => t.includes(' · ')).join() == 'eval · 1'", timeout=30_000)
    page.screenshot(path=str(ARTIFACTS / "panels_from_data_filtered.png"), full_page=True)
