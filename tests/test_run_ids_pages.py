"""Run ids are data: ids with `__`, spaces, unicode, commas and 200 characters open Live, Run detail and compare
with their charts drawn, in AppTest (every id) and in Chromium against the session's real server (one id).

A client run gets `__` from `jaxdash.init(id=...)`; a folder of any name under the runs root (a copied run, a
TensorBoard run's folder) is a run too, so the others are copies of that run under such names.
"""

from __future__ import annotations

import shutil
import urllib.parse
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from benchmarks import browser_probes
from tests import client_scripts
from tests.apptest_pages import APP, app
from tests.chart_elements import charts, trace_lengths

SCRIPT = """
import numpy as np
import jaxdash

run = jaxdash.init(project="ids", id="adam__lr1e-3", name="adam lr=1e-3 / β2 ✓", wandb="disabled", tensorboard=False)
for step in range(4):
    run.log({"train/loss": 1.0 / (step + 1), "eval/acc": 0.2 * step, "opt/notes": f"step {step}",
             "train/grads": jaxdash.Histogram(np.arange(10.0) * step)}, step=step)
run.finish()
"""
IDS = [
    "adam__lr1e-3",  # the client's own id: `__` is a component key's delimiter
    "adam lr=1e-3 β2 ✓",  # spaces, unicode
    "adam__lr=1e-3, β2=0.99 ✓",  # all of it, and a comma (a compare link's separator)
    ("lr=1e-3, wd 0.1 " * 13)[:200],  # 200 characters
]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A runs root holding one finished client run under each of IDS."""
    tmp = tmp_path_factory.mktemp("ids")
    out, root = client_scripts.run(tmp, SCRIPT)
    assert out.returncode == 0, out.stderr
    original = client_scripts.only_run(root)
    assert original.name == IDS[0]
    for run_id in IDS[1:]:
        shutil.copytree(original, root / run_id, symlinks=True)
    return root


def _drawn(at) -> list[int]:  # noqa: ANN001 - an AppTest
    return [n for c in charts(at) for n in trace_lengths(c)]


@pytest.mark.parametrize("run_id", IDS, ids=["dunder", "unicode", "all", "long"])
def test_every_page_opens_a_run_whatever_its_id(runs: Path, run_id: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JAXDASH_RUNS", str(runs))
    for page in ("views/live.py", "views/detail.py"):
        at = app(page, run=run_id)  # asserts no exception
        assert not at.error, (page, [e.value for e in at.error])
        assert 4 in _drawn(at), page  # train/loss's and eval/acc's 4 points
        texts = [t.value for t in at.text]
        assert "train/grads" in texts and "opt/notes" in texts, (page, texts)  # the histogram and the text
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["compare"] = run_id  # a shared compare link
    at.run()
    at.switch_page("views/runs.py").run()
    assert not at.exception and not at.error, [e.value for e in at.exception]
    assert [c for c in charts(at) if "compare" in c.key and 4 in trace_lengths(c)], "no compare grid drawn"


# How many charts on the page (line charts and plotly's) have drawn points.
DRAWN = f"() => {browser_probes.DRAWN_CHARTS_JS}.length"
ARTIFACTS = Path(__file__).resolve().parents[1] / "test-artifacts"


@pytest.mark.browser
def test_live_detail_and_compare_open_such_a_run_in_chromium(served: tuple, tab: object, runs: Path) -> None:
    srv, root = served
    run_id = IDS[2]
    shutil.copytree(runs / IDS[0], root / run_id, symlinks=True)
    page = tab
    page.set_viewport_size({"width": 1400, "height": 3000})  # every lazy chart in view
    quoted = urllib.parse.quote(run_id)
    ARTIFACTS.mkdir(exist_ok=True)
    for path, shot in ((f"live?run={quoted}", "run_ids_live.png"), (f"detail?run={quoted}", "run_ids_detail.png")):
        page.goto(f"{srv.url}/{path}")
        page.wait_for_function(f"({DRAWN})() >= 2", timeout=60_000, polling=200)
        page.get_by_text("opt/notes", exact=True).first.wait_for(timeout=30_000)  # the text panel
        assert page.locator("[data-testid=stException]").count() == 0, path
        assert "No run `" not in page.inner_text("body"), path  # the run itself, not another one
        page.screenshot(path=str(ARTIFACTS / shot), full_page=True)
    page.goto(f"{srv.url}/runs?compare={quoted}")
    page.get_by_text("Compare 1 run").wait_for(timeout=60_000)
    page.wait_for_function(f"({DRAWN})() >= 1", timeout=60_000, polling=200)
    assert page.locator("[data-testid=stException]").count() == 0
    page.screenshot(path=str(ARTIFACTS / "run_ids_compare.png"), full_page=True)
