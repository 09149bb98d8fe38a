"""Sweep figures: numbers sorted as numbers, text as categories, the running best."""

from __future__ import annotations

from components.sweep_figures import best_so_far, parallel_coordinates


def _rows() -> list[dict]:
    lrs = [0.1, 0.001, 0.01, 0.0001]
    return [
        {"trial": i, "state": "COMPLETE", "value": v, "end": 100.0 + i, "params": {"lr": lr, "opt": o, "points": p}}
        for i, (lr, v, o, p) in enumerate(
            zip(lrs, [3.0, 1.0, 2.0, 0.5], ["sgd", "adam", "sgd", "adam"], [9, 10, 100, 64], strict=True)
        )
    ] + [{"trial": 9, "state": "PRUNED", "value": None, "end": 120.0, "params": {"lr": 5.0}}]


def test_parallel_coordinates_orders_numbers_as_numbers() -> None:
    fig = parallel_coordinates(_rows(), "train/loss")
    dims = {d.label: d for d in fig.data[0].dimensions}
    assert set(dims) == {"lr (log)", "opt", "points", "train/loss"}  # the pruned trial draws no line
    lr = dims["lr (log)"]
    assert list(lr.values) == [-1.0, -3.0, -2.0, -4.0]  # log10: 0.0001 lowest, 0.1 highest
    assert list(lr.ticktext) == ["0.0001", "0.001", "0.01", "0.1"]
    assert list(dims["points"].values) == [9.0, 10.0, 100.0, 64.0]  # 9 < 10 < 64 < 100, not "10" < "100" < "64" < "9"
    assert list(dims["opt"].ticktext) == ["adam", "sgd"] and list(dims["opt"].values) == [1, 0, 1, 0]
    assert list(fig.data[0].line.color) == [3.0, 1.0, 2.0, 0.5]


def test_best_so_far_is_the_running_minimum() -> None:
    fig = best_so_far(_rows())
    best = next(t for t in fig.data if t.name == "best so far")
    assert list(best.x) == [0.0, 1.0, 2.0, 3.0] and list(best.y) == [3.0, 1.0, 1.0, 0.5]


def test_no_finished_trials_is_an_empty_figure_with_a_note() -> None:
    for fig in (parallel_coordinates([]), best_so_far([{"state": "RUNNING", "params": {}}])):
        assert not fig.data and "No finished trials" in fig.layout.annotations[0].text
