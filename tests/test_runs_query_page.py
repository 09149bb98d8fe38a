"""The Runs page's query box: the table keeps the runs the query selects; a bad query is one line under it."""

from __future__ import annotations

from pathlib import Path

from runstore import index_keeper
from tests.apptest_pages import app, fake_run


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
