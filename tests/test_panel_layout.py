"""The per-key panels' layout on Run detail: pins, collapsed sections and big sections drawn only when opened,
kept per project in the runs root's layout file (runstore/layout_prefs.py); a damaged file is named, not fatal."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from dashboard.panels import safe_text
from dashboard.panels.data_panels import widget_key
from runstore import layout_prefs
from tests.apptest_pages import app
from tests.test_panels_from_data import _sections, logged  # noqa: F401 - the module-scoped client run


@pytest.fixture
def run_copy(logged: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:  # noqa: F811
    """The client run in a runs root of this test's own (its layout file is written there)."""
    root = tmp_path / "runs"
    shutil.copytree(logged, root / logged.name)
    monkeypatch.setenv("JAXDASH_RUNS", str(root))
    return root / logged.name


def _markdown(at) -> list[str]:  # noqa: ANN001
    return [m.value for m in at.markdown]


def test_a_pinned_key_is_drawn_on_top_and_kept_for_the_project(run_copy: Path) -> None:
    at = app("views/detail.py", run=run_copy.name)
    at.button(key=widget_key("detail_keys_pin_button", "opt/lr")).click().run()  # the pin button on its panel
    assert "**Pinned** · 1" in _markdown(at)
    assert _sections(at) == ["train · 3", "eval · 2", "opt · 1"]  # the pinned key left its section
    doc = json.loads((run_copy.parent / layout_prefs.LAYOUT_FILE).read_text())
    assert doc["projects"]["keys"]["pinned"] == ["opt/lr"]
    fresh = app("views/detail.py", run=run_copy.name)  # a new session: the project's pins come back
    assert "**Pinned** · 1" in _markdown(fresh)
    assert fresh.button(key=widget_key("detail_keys_pin_button", "opt/lr")).label == "Unpin"
    fresh.button(key=widget_key("detail_keys_pin_button", "opt/lr")).click().run()  # unpinned: back in its section
    assert "**Pinned** · 1" not in _markdown(fresh) and _sections(fresh) == ["train · 3", "eval · 2", "opt · 2"]


def test_a_collapsed_section_draws_none_of_its_panels(run_copy: Path) -> None:
    layout_prefs.save(run_copy.parent, "keys", layout_prefs.Layout(collapsed=("train",)))
    at = app("views/detail.py", run=run_copy.name)
    train = next(e for e in at.expander if e.label == "train · 3")
    assert not train.proto.expanded
    assert "train/grads" not in [t.value for t in at.text]  # its histogram panel is not drawn
    assert "eval/frame" in [t.value for t in at.text]  # the open sections are


def test_a_damaged_layout_file_is_named_and_the_panels_still_draw(run_copy: Path) -> None:
    (run_copy.parent / layout_prefs.LAYOUT_FILE).write_text("{not json")
    at = app("views/detail.py", run=run_copy.name)
    assert not at.exception
    shown = [safe_text.plain(w.value) for w in at.warning]  # a path is text: markdown escaped
    assert any(layout_prefs.LAYOUT_FILE in w and "Delete or fix it" in w for w in shown), shown
    assert _sections(at) == ["train · 3", "eval · 2", "opt · 2"]


BIG = """
import jaxdash as wandb

wandb.init(project="big", name="many", wandb="disabled", tensorboard=False)
wandb.log({f"layer/w{i}": float(i) for i in range(100)} | {"train/loss": 1.0}, step=0)
wandb.finish()
"""


def test_a_section_of_a_hundred_keys_starts_closed_and_draws_nothing(tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    from tests import client_scripts

    out, root = client_scripts.run(tmp_path, BIG)
    assert out.returncode == 0, out.stderr
    monkeypatch.setenv("JAXDASH_RUNS", str(root))
    at = app("views/detail.py", run=client_scripts.only_run(root).name)
    big = next(e for e in at.expander if e.label == "layer · 100")
    assert not big.proto.expanded
    assert len(at.get("plotly_chart")) + len(at.get("bidi_component")) < 50  # not 100 charts


def test_a_grid_of_two_hundred_metrics_builds() -> None:
    """Before: plotly refused the grid's row spacing past ~40 rows ("Vertical spacing cannot be greater than")."""
    from components import compare_figures
    from components.chart_look import CurveLook

    names = [f"m{i}" for i in range(200)]
    data = compare_figures.GridData(names, {t: {"run": ([0, 1], [1.0, 2.0])} for t in names})
    fig = compare_figures.metric_grid(data, CurveLook(colors={"run": "#123456"}))
    assert len(fig.data) == 200
