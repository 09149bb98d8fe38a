"""Every key a run logged is kept (W&B keeps every key): a 1,000-key client run lists all of them and draws
`train/loss`, its last key; the bound (metric_cache.MAX_TAGS keys) keeps a file inventing a key per line
within a memory budget, and the page says how many keys it left out."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from runstore import run_folder
from runstore.metrics import metric_cache
from runstore.metrics.metric_table import MetricTable
from tests import client_scripts
from tests.apptest_pages import app
from tests.chart_elements import charts, figure, trace_lengths

SCRIPT = """
import jaxdash

run = jaxdash.init(project="wide", name="thousand-keys", wandb="disabled", tensorboard=False)
for step in range(5):
    row = {f"grads/layer{i:03d}": step + i / 1000 for i in range(999)}
    row["train/loss"] = 1.0 / (step + 1)  # the 1,000th key, first logged after 999 others
    run.log(row, step=step)
run.finish()
"""


@pytest.fixture(scope="module")
def wide(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished client run that logged 1,000 keys at 5 steps."""
    out, root = client_scripts.run(tmp_path_factory.mktemp("wide"), SCRIPT)
    assert out.returncode == 0, out.stderr
    return client_scripts.only_run(root)


def test_a_thousand_key_run_keeps_every_key(wide: Path) -> None:
    table = MetricTable().update(wide)
    assert len(table.tags()) == 1000 and table.dropped_keys == 0
    assert table.ordered_tags()[-1] == "train/loss"
    steps, loss = table.series("train/loss")
    assert steps.tolist() == [0, 1, 2, 3, 4] and loss.tolist() == [1.0, 0.5, 1 / 3, 0.25, 0.2]
    assert table.series("grads/layer998")[1].tolist() == [s + 0.998 for s in range(5)]


def test_run_detail_lists_every_key_and_draws_train_loss(wide: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JAXDASH_RUNS", str(wide.parent))
    at = app("views/detail.py", run=wide.name)
    sections = [e.label for e in at.expander if "·" in e.label]
    assert sections == ["grads · 999"]  # every key counted; the big section starts closed
    loss = [c for c in charts(at) if [t["name"] for t in figure(c)["data"]] == ["train/loss"]]
    assert loss and trace_lengths(loss[0]) == [5]  # the loss panel (train/loss is its key)


def test_a_file_inventing_a_key_per_line_is_bounded_and_named(tmp_path: Path) -> None:
    keys = metric_cache.MAX_TAGS + 2_000
    with open(tmp_path / run_folder.RECORDS, "w") as f:
        for i in range(keys):
            f.write(json.dumps({"step": i, "wall": i * 0.1, f"k/{i:05d}": float(i)}) + "\n")
    tracemalloc.start()
    table = MetricTable().update(tmp_path)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert len(table.tags()) == metric_cache.MAX_TAGS and table.dropped_keys == 2_000
    assert table.series(f"k/{metric_cache.MAX_TAGS - 1:05d}")[1].tolist() == [metric_cache.MAX_TAGS - 1]
    assert peak < 400 * 2**20, f"peak {peak / 2**20:.0f} MB"  # dense columns were keys x lines: 1.1 GB here
    assert np.isfinite(table.step_range()).all()


def test_live_draws_train_loss_of_a_thousand_key_run(wide: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JAXDASH_RUNS", str(wide.parent))
    at = app("views/live.py", run=wide.name)
    assert [e.label for e in at.expander if "·" in e.label] == ["grads · 999"]  # drawn when opened
    loss = [c for c in charts(at) if [t["name"] for t in figure(c)["data"]] == ["train/loss"]]
    assert loss and trace_lengths(loss[0]) == [5]
    assert len(charts(at)) < 10  # not a chart per key of the closed section


PAST_BOUND = """
import jaxdash

run = jaxdash.init(project="wide", name="past-the-bound", wandb="disabled", tensorboard=False)
for i in range(10_050):
    run.log({f"k/{i:05d}": float(i)}, step=i)  # a new key every step
run.log({"train/loss": 0.5}, step=10_050)
run.finish()
"""


def test_run_detail_says_how_many_keys_past_the_bound_were_not_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out, root = client_scripts.run(tmp_path, PAST_BOUND)
    assert out.returncode == 0, out.stderr
    monkeypatch.setenv("JAXDASH_RUNS", str(root))
    for page in ("views/detail.py", "views/live.py"):
        at = app(page, run=client_scripts.only_run(root).name)
        notes = [c.value for c in at.caption if "metric keys" in c.value]
        assert notes == [
            "This run logged more than 10,000 metric keys: 51 past the first 10,000 are not kept by the dashboard "
            "(they stay in the run's metrics.jsonl)."
        ], page
