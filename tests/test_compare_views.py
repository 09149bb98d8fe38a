"""Compare: shared metrics, what differs, population bands, parallel coordinates; on the page with AppTest."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import numpy as np

from components import compare_figures
from components.chart_look import CurveLook
from components.colors import run_color
from dashboard.panels import compare_data
from runstore import run_index
from runstore.run_folder import RunFolder
from tests.apptest_pages import app, fake_population, fake_run
from tests.chart_elements import charts


def test_metric_sets_name_the_runs_lacking_a_metric() -> None:
    shared, missing = compare_data.metric_sets({"a": {"train/loss", "test/acc"}, "b": {"train/loss", "sys/rss_mb"}})
    assert shared == ["train/loss"]
    assert missing == {"sys/rss_mb": ["a"], "test/acc": ["b"]}


def test_band_spans_the_members_and_std_is_around_the_mean() -> None:
    x = np.arange(10.0)
    band = compare_data.band([(x, x), (x, x + 2)], "min-max", points=10)
    assert np.allclose(band.mean, x + 1) and np.allclose(band.low, x) and np.allclose(band.high, x + 2)
    std = compare_data.band([(x, x), (x, x + 2)], "std", points=10)
    assert np.allclose(std.high - std.mean, 1.0)


def test_grid_has_a_subplot_per_metric_one_legend_entry_per_run_and_a_note_for_missing() -> None:
    xy = (np.arange(5.0), np.arange(5.0))
    fig = compare_figures.metric_grid(
        compare_figures.GridData(
            ["train/loss", "test/acc"],
            {"train/loss": {"a": xy, "b": xy}, "test/acc": {"a": xy}},
            missing={"test/acc": ["b"]},
        ),
        CurveLook(log_y=True, colors={"a": "#111111", "b": "#222222"}),
    )
    assert len(fig.data) == 3 and [t.name for t in fig.data if t.showlegend] == ["a", "b"]
    assert "not logged by b" in fig.layout.annotations[1].text
    # What the canvas grid (dashboard/panels/static/line_grid.js) draws from: panels in order, log except accuracy.
    grid = fig.layout.meta["grid"]
    assert grid == {
        "cols": 2, "titles": ["train/loss", "test/acc"], "lacking": [[], ["b"]], "log": [True, False], "x_title": "step"
    }  # fmt: skip
    assert [fig.layout.yaxis.type, fig.layout.yaxis2.type] == ["log", "linear"]


def test_parallel_coordinates_map_text_settings_to_categories() -> None:
    rows = [{"opt": "adam", "lr": 0.1, "test/acc": 0.9}, {"opt": "sgd", "lr": 0.01, "test/acc": 0.8}]
    fig = compare_figures.parallel_coordinates(rows, ["opt", "lr"], ["test/acc"])
    dims = fig.data[0].dimensions
    assert [d.label for d in dims] == ["opt", "lr", "test/acc"] and list(dims[0].ticktext) == ["adam", "sgd"]


def test_page_compares_every_shared_metric_notes_missing_ones_and_lists_what_differs(runs_root: Path) -> None:
    reg = fake_run(runs_root, "regression", "finished", name="reg")
    mn = fake_run(runs_root, "mnist", "finished", name="mn", config={"lr": 0.01})
    at = app("views/runs.py", selected_ids=[reg.name, mn.name])
    (grid, parcoords) = charts(at)
    spec = json.loads(grid.proto.spec)
    assert {t["name"] for t in spec["data"]} == {"reg", "mn"}
    assert {t["line"]["color"] for t in spec["data"]} == {run_color(reg.name), run_color(mn.name)}
    assert any("test/acc" in i.value and "not logged by reg" in i.value for i in at.info)
    differs = at.dataframe[1].value
    assert "task" in differs.index and list(differs.loc["task"]) == ["regression", "mnist"]
    assert json.loads(parcoords.proto.spec)["data"][0]["type"] == "parcoords"
    at.toggle(key="cmp_partial").set_value(True).run()
    titles = [a["text"] for a in json.loads(charts(at)[0].proto.spec)["layout"]["annotations"]]
    assert any("not logged by reg" in t for t in titles)


def test_population_shown_as_mean_with_band(runs_root: Path) -> None:
    pop = fake_population(runs_root, "regression")
    at = app("views/runs.py", selected_ids=[d.name for d in pop])

    def grid_data() -> list:  # every section's grid (a grid per prefix: train/, test/)
        return [t for c in charts(at) for t in json.loads(c.proto.spec)["data"] if t["type"] != "parcoords"]

    assert len(grid_data()) == 6 * 3
    at.segmented_control(key="cmp_pop").set_value("min-max").run()
    data = grid_data()
    assert len(data) == 2 * 3 and any(t.get("fill") == "toself" for t in data)  # band + mean per metric
    assert any("(mean of 6)" in t["name"] for t in data)


def test_zoom_redraws_the_range_at_full_resolution(runs_root: Path) -> None:
    d = fake_run(runs_root, "regression", "finished", n=40, name="big")
    RunFolder(d).append_records(
        [{"step": 1000 + i, "wall": 10.0 + i, "train/loss": 1.0 / (i + 1)} for i in range(60_000)]
    )
    run_index.update(runs_root)  # read first, as a server's keeper has it: the page waits for it at most a second
    at = app("views/runs.py", selected_ids=[d.name])
    at.slider(key="cmp_range").set_value((30_000, 30_100)).run()
    data = json.loads(charts(at)[0].proto.spec)["data"]
    loss = next(t for t in data if t["xaxis"] == "x")
    x = np.frombuffer(base64.b64decode(loss["x"]["bdata"]), loss["x"]["dtype"])
    assert list(x) == list(range(30_000, 30_101))  # every step of the range, not the thinned overview
