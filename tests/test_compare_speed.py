"""Compare of many runs from a fresh tab: a comparison's figures are built once for every session, and only
the first section's grid is drawn at once (the others when scrolled near)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from components import compare_figures
from dashboard.panels import compare
from runstore import run_store
from runstore.run_folder import RunFolder
from tests.apptest_pages import app, fake_run
from tests.chart_elements import charts, figure, trace_lengths


@pytest.fixture
def builds(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, ...]]:
    """The tags of every compare grid built (compare_figures.metric_grid called), in order."""
    built: list[tuple[str, ...]] = []
    grid = compare_figures.metric_grid
    monkeypatch.setattr(
        compare_figures, "metric_grid", lambda data, *a, **k: built.append(tuple(data.tags)) or grid(data, *a, **k)
    )
    monkeypatch.setattr(compare, "_SPECS", type(compare._SPECS)())  # none kept from other tests
    return built


def _grids(at: object) -> list[dict]:
    return [figure(c) for c in charts(at) if "compare_section" in c.key]


def test_a_fresh_tab_opening_the_same_comparison_is_sent_the_kept_figures_not_new_ones(
    runs_root: Path, builds: list[tuple[str, ...]]
) -> None:
    runs = [fake_run(runs_root, "mnist", "finished", name=f"r{i}", config={"lr": 0.01 * (i + 1)}) for i in range(3)]
    ids = [d.name for d in runs]
    first = app("views/runs.py", selected_ids=ids)
    assert builds == [("train/acc", "train/loss"), ("test/acc",)]
    second = app("views/runs.py", selected_ids=ids)  # another session: a fresh tab
    assert builds == [("train/acc", "train/loss"), ("test/acc",)]  # nothing built again
    assert _grids(second) == _grids(first) and len(_grids(second)) == 2
    # a run that logged more, or another setting, is built anew
    RunFolder(runs[0]).append_records([{"step": 1000 + i, "wall": 9.0 + i, "train/loss": 0.01} for i in range(5)])
    third = app("views/runs.py", selected_ids=ids)
    assert builds[2:] == [("train/acc", "train/loss"), ("test/acc",)]
    lengths = trace_lengths(charts(third)[0])
    assert sorted(n for t, n in zip(_grids(third)[0]["data"], lengths, strict=True) if t["name"] == "r0") == [50, 55]
    third.toggle(key="cmp_partial").set_value(True).run()
    assert len(builds) > 3


def test_only_the_first_sections_grid_is_drawn_at_once(runs_root: Path, builds: list[tuple[str, ...]]) -> None:
    runs = [fake_run(runs_root, "mnist", "finished", name=f"r{i}") for i in range(2)]
    at = app("views/runs.py", selected_ids=[d.name for d in runs])
    lazy = [json.loads(el.proto.json)["lazy"] for el in at.get("bidi_component") if "compare_section" in el.proto.id]
    assert lazy == [False, True]  # train/ at once; test/ when scrolled near


def _small_run(root: Path, i: int) -> Path:
    d = run_store.new_run_dir(root, "mnist", f"s{i}")
    RunFolder(d).write_config("mnist", {"lr": 0.001 * (i + 1)}, name=f"s{i}", task_spec="mnist")
    RunFolder(d).write_status(state="finished", step=50)
    RunFolder(d).append_records([{"step": s, "wall": s * 0.1, "train/loss": 1 / s} for s in range(1, 6)])
    return d


def test_a_fresh_tab_comparing_100_runs_is_sent_the_kept_figures(
    runs_root: Path, builds: list[tuple[str, ...]]
) -> None:
    ids = [_small_run(runs_root, i).name for i in range(100)]  # the most the Runs page's query button compares
    app("views/runs.py", selected_ids=ids)
    assert builds == [("train/loss",)]
    second = app("views/runs.py", selected_ids=ids)  # each run's table still kept: nothing read or built again
    assert builds == [("train/loss",)]
    assert len(trace_lengths(charts(second)[0])) == 100
