"""Run detail draws a panel per logged key of every kind (scalar, histogram, image, text), a section per prefix,
from a real client run (the `jaxdash` client in a subprocess), in AppTest."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import client_scripts
from tests.apptest_pages import app

SCRIPT = """
import numpy as np
import jaxdash as wandb

wandb.init(project="keys", name="three-prefixes", wandb="disabled", tensorboard=False,
           config={"lr": 0.01, "optimizer": "adam", "layers": [64, 64]})
for step in range(3):
    frame = np.full((6, 6), step * 60, np.uint8)
    wandb.log({"train/a": 1.0 * step, "train/b": 2.0, "eval/c": 3.0, "opt/lr": 0.1, "opt/notes": f"step {step}",
               "eval/frame": wandb.Image(frame), "train/grads": wandb.Histogram(np.arange(10.0) * step)}, step=step)
wandb.finish()
"""


@pytest.fixture(scope="module")
def logged(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished client run that logged scalars, a histogram, an image and a text in three prefixes."""
    tmp = tmp_path_factory.mktemp("keys")
    out, root = client_scripts.run(tmp, SCRIPT)
    assert out.returncode == 0, out.stderr
    return client_scripts.only_run(root)


def _sections(at) -> list[str]:  # noqa: ANN001
    return [e.label for e in at.expander if "·" in e.label]


def test_every_kind_of_key_gets_a_panel_in_its_prefix_section(logged: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JAXDASH_RUNS", str(logged.parent))
    at = app("views/detail.py", run=logged.name)
    assert _sections(at) == ["train · 3", "eval · 2", "opt · 2"]  # first-appearance order, every kind counted
    texts = [t.value for t in at.text]
    for key in ("eval/frame", "train/grads", "opt/notes"):  # the image, histogram and text panels, by key
        assert key in texts, texts
    assert any("jaxdash-text-step" in h.proto.body for h in at.get("html"))  # the text panel, rendered


def test_the_filter_box_narrows_the_panels_to_matching_keys(logged: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JAXDASH_RUNS", str(logged.parent))
    at = app("views/detail.py", run=logged.name)
    at.text_input(key="detail_keys_filter").set_value("frame").run()
    assert _sections(at) == ["eval · 1"]
    assert "eval/frame" in [t.value for t in at.text]
    assert "train/grads" not in [t.value for t in at.text]


def test_hparams_are_columns_of_the_runs_table(logged: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JAXDASH_RUNS", str(logged.parent))
    at = app("views/runs.py")
    (table,) = [d.value for d in at.dataframe if "config" in d.value.columns]
    assert table["config.lr"].tolist() == [0.01] and table["config.optimizer"].tolist() == ["adam"]
    assert "config.layers" not in table.columns  # a list stays in the config text


def test_compare_draws_a_grid_per_prefix_section(logged: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.chart_elements import charts, figure

    monkeypatch.setenv("JAXDASH_RUNS", str(logged.parent))
    at = app("views/runs.py", selected_ids=[logged.name])
    assert sorted(_sections(at)) == ["eval · 1", "opt · 1", "train · 2"]
    grids = [{a["text"] for a in figure(c)["layout"].get("annotations", [])} for c in charts(at)]
    assert {"train/a", "train/b"} in grids and {"eval/c"} in grids and {"opt/lr"} in grids, grids  # one per section
