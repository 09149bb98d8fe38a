"""The metric tiles at the top of Live and Run detail: which of a run's keys get a number."""

from __future__ import annotations

from pathlib import Path

from dashboard.panels.run_numbers import MAX_TILES, tile_tags
from runstore.metrics.metric_table import MetricTable
from runstore.run_folder import RunFolder


def _table(run: Path, keys: list[str]) -> MetricTable:
    run.mkdir()
    RunFolder(run).append_records([{"step": s, **{k: float(s) for k in keys}} for s in range(3)])
    return MetricTable().update(run)


def test_a_run_of_many_keys_shows_its_loss_and_accuracy_first(tmp_path: Path) -> None:
    """A client run logging gradients of 10 layers before its loss: the tiles are its loss and accuracies,
    not the first six gradient names in alphabetical order."""
    grads = [f"grads/layer{i:03d}" for i in range(10)]
    shown = tile_tags(_table(tmp_path / "run", [*grads, "train/loss", "test/acc", "val/accuracy", "sys/cpu"]))
    assert shown[:3] == ["val/accuracy", "train/loss", "test/acc"] and len(shown) == MAX_TILES
    assert "sys/cpu" not in shown


def test_a_tasks_own_tags_still_come_before_train_and_test(tmp_path: Path) -> None:
    shown = tile_tags(_table(tmp_path / "run", ["test/mae", "train/lr", "fit/w", "train/loss"]))
    assert shown == ["train/loss", "fit/w", "train/lr", "test/mae"]
