"""Group by a config field on the Runs page (AppTest): the table gets a row per group (its value, count and the
mean of each final metric) that narrows the runs table to its runs, and the comparison draws one line per group
(the mean with a band) labelled with its value and count."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from tests.apptest_pages import app, fake_run
from tests.chart_elements import charts, trace_values


def _runs(root: Path) -> dict[str, Path]:
    return {
        "a": fake_run(root, "regression", "finished", n=50, name="a", config={"lr": 0.01}),
        "b": fake_run(root, "regression", "finished", n=30, name="b", config={"lr": 0.01}),
        "c": fake_run(root, "regression", "finished", n=40, name="c", config={"lr": 0.1}),
    }


def test_compare_grouped_by_config_lr_draws_one_line_per_group_with_its_count(runs_root: Path) -> None:
    runs = _runs(runs_root)
    at = app("views/runs.py", selected_ids=[d.name for d in runs.values()])
    names = {t.get("name") for c in charts(at) for t in json.loads(c.proto.spec)["data"]}
    assert {"a", "b", "c"} <= names  # a line per run before grouping
    at.selectbox(key="runs_group_by").set_value("lr").run()
    assert not at.exception
    (grid, *_) = charts(at)
    data = json.loads(grid.proto.spec)["data"]
    legend = [t["name"] for t in data if t.get("showlegend") is not False]
    assert legend == ["lr=0.01 (2 runs)", "lr=0.1 (1 run)"]  # one entry a group, its count in its label
    loss = [(t, v) for t, v in zip(data, trace_values(grid, "y"), strict=True) if t["xaxis"] == "x"]
    assert sum(t.get("fill") == "toself" for t, _ in loss) == 2  # a band a group
    mean = next(v for t, v in loss if t["name"] == "lr=0.01 (2 runs)" and t.get("fill") != "toself")
    steps = np.arange(10, 510, 10)
    assert np.allclose(mean, 1.0 / (steps / 10))  # both runs log 1/(i+1) at their steps: the mean at each of them
    groups = at.dataframe[0].value
    assert list(groups["config.lr"]) == ["0.01", "0.1"] and list(groups["runs"]) == [2, 1]
    assert groups["mean final train/loss"].tolist() == [0.25, 0.25]
    at.segmented_control(key="cmp_group_band").set_value("std").run()
    assert not at.exception and sum(t.get("fill") == "toself" for t in json.loads(charts(at)[0].proto.spec)["data"])


def test_picking_a_group_row_narrows_the_runs_table_and_selects_its_runs(runs_root: Path) -> None:
    runs = _runs(runs_root)
    at = app("views/runs.py")
    at.selectbox(key="runs_group_by").set_value("lr").run()
    assert list(at.dataframe[1].value["name"]) in (["a", "b", "c"], ["b", "a", "c"])  # a group's runs together
    groups_key = "runs_groups_" + at.dataframe[0].proto.id.rsplit("runs_groups_", 1)[1]  # its key, within its id
    at.session_state[groups_key] = {"selection": {"rows": [0], "columns": [], "cells": []}}
    at.run()
    assert set(at.dataframe[1].value["name"]) == {"a", "b"}
    at.button(key="runs_group_select").click().run()
    assert not at.exception
    assert set(at.session_state["selected_ids"]) == {runs["a"].name, runs["b"].name}
    legend = {t.get("name") for t in json.loads(charts(at)[0].proto.spec)["data"] if t.get("showlegend") is not False}
    assert legend == {"lr=0.01 (2 runs)"}
