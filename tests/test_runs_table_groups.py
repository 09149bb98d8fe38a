"""Runs table: a W&B `group=` is a group of runs (a column, a filter, rows together, select the whole group),
never a population: each run keeps its own state and config, and populations still work beside it.
`job_type` is a column and a filter; a run's alerts are counted in its row.

The W&B runs come from a real subprocess (`import jaxdash as wandb`, W&B's group/worker pattern); the
population is written with the run store's own writer (tests/apptest_pages.fake_population)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from tests.apptest_pages import app, fake_population
from tests.chart_elements import charts, figure
from tests.test_run_detail_wandb import run_script

SCRIPT = """
import jaxdash as wandb

for i, job in enumerate(["train", "eval"]):
    run = wandb.init(project="grp", name=f"worker-{i}", group="exp-a", job_type=job, config={"worker": i})
    for s in range(3):
        run.log({"loss": 1.0 / (s + 1 + i)})
    if i == 1:
        run.alert(title="eval slow", text="took 10 s", level=wandb.AlertLevel.WARN)
    run.finish(exit_code=i)  # worker-1 fails: its own state, not the group's
run = wandb.init(project="grp", name="solo", job_type="train")
run.log({"loss": 0.5})
run.finish()
"""


@pytest.fixture(scope="module")
def script_runs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """The three runs the script wrote (one module-wide copy: each test copies it into its own root)."""
    base = tmp_path_factory.mktemp("wandb_groups")
    (root := base / "runs").mkdir()
    return run_script(root, base / "work", SCRIPT)


@pytest.fixture
def table_root(script_runs: list[Path], root: Path) -> Path:
    """A runs root with the script's runs and then a population (newer: listed first)."""
    import shutil

    for d in script_runs:
        shutil.copytree(d, root / d.name, symlinks=True)
    fake_population(root, "regression", lrs=(0.001, 0.01), seeds=(0,))
    return root


def _by_name(df: pd.DataFrame) -> dict[str, pd.Series]:
    return {row["name"]: row for _, row in df.iterrows()}


def test_wandb_group_job_type_and_alerts_are_columns_and_populations_stay(table_root: Path) -> None:
    at = app("views/runs.py")
    rows = _by_name(at.dataframe[0].value)
    w0, w1, solo = rows["worker-0"], rows["worker-1"], rows["solo"]
    assert (w0["wandb group"], w1["wandb group"]) == ("exp-a", "exp-a") and pd.isna(solo["wandb group"])
    assert pd.isna(w0["group"]) and pd.isna(w1["group"]), "a W&B group became a population"
    assert (w0["job type"], w1["job type"], solo["job type"]) == ("train", "eval", "train")
    assert (w0["status"], w1["status"]) == ("finished", "failed")  # each its own state
    assert "worker=0" in w0["config"] and "worker=1" in w1["config"]  # and its own config
    assert w1["alerts"] == 1 and pd.isna(w0["alerts"])
    members = [r for name, r in rows.items() if name.startswith("pop #")]
    assert len(members) == 2 and all(isinstance(m["group"], str) and pd.isna(m["wandb group"]) for m in members)


def test_filters_by_wandb_group_and_job_type_beside_the_population_filter(table_root: Path) -> None:
    at = app("views/runs.py")
    at.multiselect(key="runs_filter_wandb_groups").set_value(["exp-a"]).run()
    assert sorted(at.dataframe[0].value["name"]) == ["worker-0", "worker-1"]
    at.multiselect(key="runs_filter_job_types").set_value(["eval"]).run()
    assert list(at.dataframe[0].value["name"]) == ["worker-1"]
    at.multiselect(key="runs_filter_wandb_groups").set_value([]).run()
    at.multiselect(key="runs_filter_job_types").set_value([]).run()
    population = at.multiselect(key="runs_filter_groups")
    population.set_value(population.options[:1]).run()
    assert sorted(at.dataframe[0].value["name"]) == ["pop #0 (lr=0.001 seed=0)", "pop #1 (lr=0.01 seed=0)"]
    searched = app("views/runs.py", runs_search="exp-a")
    assert sorted(searched.dataframe[0].value["name"]) == ["worker-0", "worker-1"]


def test_group_by_wandb_group_puts_its_runs_together(table_root: Path) -> None:
    at = app("views/runs.py")
    assert not str(at.dataframe[0].value["name"].iloc[0]).startswith("worker")  # newest first
    at.toggle(key="runs_by_wandb_group").set_value(True).run()
    names = list(at.dataframe[0].value["name"])
    assert names[:2] == ["worker-1", "worker-0"] and len(names) == 5  # one row a run, none merged


def test_select_whole_wandb_group_compares_each_run_as_itself(table_root: Path) -> None:
    one = next(d for d in table_root.iterdir() if d.name.endswith(tuple("0123456789abcdef")) and "worker-0" in d.name)
    at = app("views/runs.py", selected_ids=[one.name])
    button = next(b for b in at.button if b.label.startswith("Select whole W&B group"))
    assert button.label == "Select whole W&B group (2)"
    button.click().run()
    assert len(at.session_state["selected_ids"]) == 2
    names = {t.get("name") for c in charts(at) for t in figure(c)["data"]}
    assert {"worker-0", "worker-1"} <= names and not any("mean of" in str(n) for n in names)


def test_run_detail_compares_its_wandb_group(table_root: Path) -> None:
    """From a run of a W&B group, one button opens Runs & compare with the group's runs selected."""
    worker = next(d for d in table_root.iterdir() if "worker-0" in d.name)
    at = app("views/detail.py", run=worker.name)
    button = at.button(key="detail_wandb_group")
    assert button.label == "Compare its W&B group (2 runs)"
    button.click().run()
    assert not at.exception
    assert sorted(at.session_state["selected_ids"]) == sorted(
        d.name for d in table_root.iterdir() if "worker" in d.name
    )
    names = {t.get("name") for c in charts(at) for t in figure(c)["data"]}
    assert {"worker-0", "worker-1"} <= names
    solo = next(d for d in table_root.iterdir() if "solo" in d.name)
    assert "detail_wandb_group" not in [b.key for b in app("views/detail.py", run=solo.name).button]
