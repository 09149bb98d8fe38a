"""Grouping runs by a config field (components/run_groups.py), checked against numpy on hand-made runs: the groups
and their labels, each group's mean and band at every step, runs of different steps aligned on the union of their
steps, a group of one run, and the runs table's row per group."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from components import run_groups

CONFIGS = {
    "a": {"lr": 0.01, "opt": "adam"},
    "b": {"lr": 0.1, "opt": "sgd"},
    "c": {"lr": 0.01, "opt": "sgd", "model.hidden": 32},
    "d": {"opt": "adam", "tags": ["x"]},
    "e": {"lr": 1e-5},
}


def test_groups_by_value_in_order_with_their_counts_and_the_runs_without_the_field_last() -> None:
    found = run_groups.groups(CONFIGS, "lr")
    assert [(g.text, g.run_ids) for g in found] == [("1e-05", ("e",)), ("0.01", ("a", "c")), ("0.1", ("b",)),
                                                    ("—", ("d",))]  # fmt: skip
    assert [g.label("lr") for g in found][1:3] == ["lr=0.01 (2 runs)", "lr=0.1 (1 run)"]
    assert [g.text for g in run_groups.groups({"x": {"k": 1}, "y": {"k": 1.0}, "z": {"k": True}}, "k")] == ["1", "true"]
    assert run_groups.keys(CONFIGS.values()) == ["lr", "model.hidden", "opt"]  # a list is not a field to group by


def _grid_values(curves: list[tuple[np.ndarray, np.ndarray]], x: np.ndarray) -> np.ndarray:
    """numpy's own answer: each run interpolated at x inside its own range, NaN outside."""
    out = np.full((len(curves), x.size), np.nan)
    for i, (cx, cy) in enumerate(curves):
        inside = (x >= cx.min()) & (x <= cx.max())
        out[i, inside] = np.interp(x[inside], cx, cy)
    return out


def test_mean_and_band_at_every_step_of_runs_logging_the_same_steps() -> None:
    rng = np.random.default_rng(0)
    x = np.arange(0.0, 50.0, 5.0)
    ys = [rng.normal(size=x.size) for _ in range(4)]
    curves = [(x, y) for y in ys]
    stack = np.vstack(ys)
    band = run_groups.aggregate(curves, "min-max")
    assert np.array_equal(band.x, x)
    assert np.allclose(band.mean, stack.mean(axis=0))
    assert np.allclose(band.low, stack.min(axis=0)) and np.allclose(band.high, stack.max(axis=0))
    std = run_groups.aggregate(curves, "std")
    assert np.allclose(std.low, stack.mean(axis=0) - stack.std(axis=0))
    assert np.allclose(std.high, stack.mean(axis=0) + stack.std(axis=0))


def test_runs_of_different_steps_are_aligned_on_the_union_of_their_steps() -> None:
    a = (np.array([0.0, 10.0, 20.0, 30.0]), np.array([4.0, 3.0, 2.0, 1.0]))
    b = (np.array([5.0, 15.0, 25.0]), np.array([10.0, 20.0, 30.0]))  # other steps, a shorter range
    c = (np.array([0.0, 30.0, 30.0]), np.array([0.0, 9.0, 6.0]))  # step 30 logged twice: its last value counts
    band = run_groups.aggregate([a, b, c], "min-max")
    union = np.array([0.0, 5.0, 10.0, 15.0, 20.0, 25.0, 30.0])
    assert np.array_equal(band.x, union)
    want = _grid_values([a, b, (np.array([0.0, 30.0]), np.array([0.0, 6.0]))], union)
    assert np.allclose(band.mean, np.nanmean(want, axis=0))
    assert np.allclose(band.low, np.nanmin(want, axis=0)) and np.allclose(band.high, np.nanmax(want, axis=0))
    assert band.mean[0] == pytest.approx((4.0 + 0.0) / 2)  # b has not started at step 0: two runs count there
    assert band.mean[1] == pytest.approx((3.5 + 10.0 + 1.0) / 3)  # a and c interpolated at b's step 5
    x, rows = run_groups.aligned([a, b], max_points=4)  # more steps than points: evenly spaced over the range
    assert np.allclose(x, [0.0, 10.0, 20.0, 30.0]) and np.isnan(rows[1, 0]) and rows[1, 1] == pytest.approx(15.0)


def test_a_group_of_one_run_is_that_run_with_no_band_and_nan_points_are_left_out() -> None:
    x = np.array([1.0, 2.0, 3.0, 4.0])
    y = np.array([0.5, np.nan, 0.25, np.inf])
    band = run_groups.aggregate([(x, y)], "std")
    assert np.array_equal(band.x, [1.0, 3.0]) and np.allclose(band.mean, [0.5, 0.25])
    assert np.array_equal(band.low, band.mean) and np.array_equal(band.high, band.mean)
    assert run_groups.aggregate([], "min-max").x.size == 0
    with pytest.raises(ValueError, match="band 'iqr': expected one of min-max, std"):
        run_groups.aggregate([(x, y)], "iqr")


def test_table_has_a_row_per_group_with_its_count_and_the_mean_of_each_summary_column() -> None:
    frame = pd.DataFrame({"run_id": list("abcde"), "final test/acc": [0.8, 0.6, 0.9, None, 0.5],
                          "final loss": [1.0, 2.0, 3.0, 4.0, "?"]})  # fmt: skip
    values = {rid: c["lr"] for rid, c in CONFIGS.items() if "lr" in c}
    out = run_groups.table(frame, "lr", values, ["final test/acc", "final loss"])
    assert list(out["lr"]) == ["1e-05", "0.01", "0.1", "—"] and list(out["runs"]) == [1, 2, 1, 1]
    assert out["final test/acc"].tolist()[:3] == pytest.approx([0.5, 0.85, 0.6]) and np.isnan(out["final test/acc"][3])
    assert np.isnan(out["final loss"][0]) and out["final loss"][1] == pytest.approx(2.0)  # text is not averaged
