"""Strings a W&B script logs (`wandb.log({"phase": "warmup"})`, kept by W&B in its history) are kept every step
and shown on Run detail per key, newest step first, rendered as sanitized markdown (tests/test_text_panels.py).

The run folder comes from a real subprocess (`import jaxdash as wandb`); the page is driven with AppTest."""

from __future__ import annotations

from pathlib import Path

import pytest

from runstore import media_store, run_folder
from tests.apptest_pages import app
from tests.test_run_detail_wandb import run_script

SCRIPT = """
import jaxdash as wandb

run = wandb.init(project="texts")
run.define_metric("err", summary="min")
for i, phase in enumerate(["warmup", "train", "**bold** ![x](http://example.invalid/x.png)"]):
    run.log({"phase": phase, "loss": 1.0 / (i + 1), "eval": {"note": f"note {i}"}, "err": [3.0, 1.0, 2.0][i],
             "score": 0.9})
run.summary["score"] = 0.5
run.finish()
"""


@pytest.fixture(scope="module")
def logged(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The run folder the script above wrote."""
    base = tmp_path_factory.mktemp("texts")
    (root := base / "runs").mkdir()
    (run_dir,) = run_script(root, base / "work", SCRIPT)
    return run_dir


def test_strings_are_kept_every_step_with_the_summarys_last(logged: Path) -> None:
    found = media_store.texts(logged)
    phases = ["warmup", "train", "**bold** ![x](http://example.invalid/x.png)"]
    assert found["phase"] == list(enumerate(phases))
    assert found["eval.note"] == [(i, f"note {i}") for i in range(3)]  # W&B's key of a nested dict
    summary = (logged / run_folder.SUMMARY).read_text()
    assert '"phase": "**bold**' in summary and '"eval.note": "note 2"' in summary


def test_run_detail_shows_each_text_key_newest_step_first(logged: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JAXDASH_RUNS", str(logged.parent))
    at = app("views/detail.py", run=logged.name)
    assert "Logged keys" in [h.value for h in at.subheader]  # a panel per key (data_panels), text ones too
    bodies = [h.proto.body for h in at.get("html") if "jaxdash-text-step" in h.proto.body]
    (phase,) = [b for b in bodies if "warmup" in b]
    assert phase.index("step 2<") < phase.index("step 1<") < phase.index("step 0<")
    assert "<strong>bold</strong>" in phase and "<img" not in phase  # markdown, its image named, not fetched
    (note,) = [b for b in bodies if "note 0" in b]
    assert note.index("note 2") < note.index("note 1") < note.index("note 0")
    shown = " ".join(m.value for m in at.markdown) + " ".join(c.value for c in at.caption)
    assert "example.invalid" not in shown, "a logged string reached Streamlit's markdown"


def test_a_final_number_that_is_no_last_value_says_what_it_is(logged: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A tile on Live shows a key's last logged value; Run detail's final numbers are the run's summary, which for
    a metric defined with summary="min" or set through run.summary is another number: its label says which."""
    status = run_folder.RunFolder(logged).status()
    assert status["final"]["err"] == 1.0 and status["final"]["score"] == 0.5
    assert status["final_basis"] == {"err": "min", "score": "run.summary"}  # loss's final is its last value
    monkeypatch.setenv("JAXDASH_RUNS", str(logged.parent))
    at = app("views/detail.py", run=logged.name)
    shown = {m.label: m.value for m in at.metric}
    assert shown["err · min"] == "1" and shown["score · run.summary"] == "0.5" and "loss" in shown
    assert "err" not in shown and "score" not in shown  # never a bare label on a number a tile of it would not show
