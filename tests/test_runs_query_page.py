"""The Runs page's query box: the table keeps the runs the query selects; a bad query is one line under it."""

from __future__ import annotations

import json
from pathlib import Path

from runstore import index_keeper
from tests.apptest_pages import app, fake_run
from tests.chart_elements import charts


def test_query_box_narrows_the_table_and_shows_an_error_as_one_line(runs_root: Path) -> None:
    fake_run(runs_root, "regression", "finished", name="slow", config={"lr": 0.001})
    fake_run(runs_root, "regression", "failed", name="fast", config={"lr": 0.1})
    try:
        at = app("views/runs.py")
        assert set(at.dataframe[0].value["name"]) == {"slow", "fast"}
        at.text_input(key="runs_query").input("config.lr < 0.01 and summary.train/loss.min < 1").run()
        assert not at.exception and not at.error
        assert list(at.dataframe[0].value["name"]) == ["slow"]
        assert any("1 of 2 runs match" in c.value for c in at.caption)
        at.text_input(key="runs_query").input('config.lr < "x"; drop table runs').run()
        assert not at.exception
        (error,) = at.error
        assert error.value.count("\n") == 0 and error.value.startswith("query, position 16: unexpected character")
        assert set(at.dataframe[0].value["name"]) == {"slow", "fast"}  # the table stays whole under a bad query
    finally:
        index_keeper.stop_all()


def test_compare_the_runs_a_query_selects_in_one_click(runs_root: Path) -> None:
    slow = fake_run(runs_root, "regression", "finished", name="slow", config={"lr": 0.001})
    slower = fake_run(runs_root, "regression", "finished", name="slower", config={"lr": 0.0005})
    fake_run(runs_root, "regression", "failed", name="fast", config={"lr": 0.1})
    try:
        at = app("views/runs.py")
        at.text_input(key="runs_query").input("config.lr < 0.01").run()
        at.button(key="runs_select_matching").click().run()
        assert not at.exception
        assert set(at.session_state["selected_ids"]) == {slow.name, slower.name}
        legend = {t.get("name") for t in json.loads(charts(at)[0].proto.spec)["data"]}
        assert {"slow", "slower"} <= legend and "fast" not in legend  # the comparison draws what the query selects
    finally:
        index_keeper.stop_all()
