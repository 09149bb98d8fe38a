"""A resume's W&B copy against the folder the killed process left, with real (offline) wandb, no subprocess race.

The killed process's folder holds the steps up to its last committed row; `resume` replays every step after
the checkpoint, so some replayed steps are already in that folder. Those must not be logged again, media
included (a step in two folders shows twice after `wandb sync`), and the ones it lacks must be logged whole.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from runstore.run_folder import RunFolder
from runwriters.base import Tracking
from runwriters.wandb import writer as wandb_writer
from runwriters.wandb.writer import WandbWriter
from tests import wandb_leet

CONFIG = {"task": "regression", "lr": 0.01}


@pytest.fixture(autouse=True)
def _wandb_offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """W&B offline with its state in tmp; a stray network call goes to a closed local port."""
    for key in ("WANDB_DIR", "WANDB_PROJECT", "WANDB_RUN_GROUP", "WANDB_RUN_ID", "WANDB_API_KEY"):
        monkeypatch.delenv(key, raising=False)
    for key, sub in (("WANDB_CACHE_DIR", "cache"), ("WANDB_CONFIG_DIR", "config"), ("WANDB_DATA_DIR", "data")):
        monkeypatch.setenv(key, str(tmp_path / f"wandb-{sub}"))
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_BASE_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("WANDB_DISABLE_GIT", "true")
    monkeypatch.setattr(wandb_writer, "FLUSH_SECS", 0.0)


def _history(folder: Path) -> list[dict]:
    """The history rows of a closed run's folder, once wandb-core has written its end."""
    return [r["history"]["item"] for r in wandb_leet.finished_records(folder) if r.get("type") == "history"]


def _steps(rows: list[dict]) -> list[int]:
    return [int(row["global_step"]) for row in rows]


def _write(writer: WandbWriter, step: int, with_media: bool) -> None:
    writer.write_scalars(step, {"train/loss": 1 / step})
    if with_media:  # what a log step of a task or a client script may add beside its scalars
        writer.write_histograms(step, {"params/w": np.linspace(-1, 1, 50) * step})
        writer.write_texts(step, {"note": f"step {step}"})
    writer.flush()


def test_replayed_steps_the_killed_folder_holds_are_not_logged_again_media_included(tmp_path: Path) -> None:
    """Killed at step 40 (all of it in W&B, media too) after the checkpoint at 30; metrics.jsonl holds 10..40.
    The resume replays 40 (again with its media), 50 and 60: the second folder gets 50 and 60, only."""
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    RunFolder(run_dir).append_records(
        [{"step": s, "wall": 1.0, "ts": 0.0, "train/loss": 1 / s} for s in range(10, 41, 10)]
    )
    first = WandbWriter(run_dir, CONFIG, Tracking("offline"))
    for step in (10, 20, 30, 40):
        _write(first, step, with_media=step == 40)
    first.close("crashed")  # as the killed process's wandb-core leaves it: every row written

    resumed = WandbWriter(run_dir, CONFIG, Tracking("offline"), resume=True, resume_step=30)
    for step in (40, 50, 60):  # the engine replays every step after the checkpoint
        _write(resumed, step, with_media=step == 40)
    resumed.close()

    folders = sorted((run_dir / "wandb").glob("offline-run-*"))
    assert len(folders) == 2, folders
    first_rows, second_rows = (_history(f) for f in folders)
    assert _steps(first_rows) == [10, 20, 30, 40]
    assert _steps(second_rows) == [50, 60], "a replayed step the first folder holds is not logged again, media too"
    assert [row["train/loss"] for row in second_rows] == pytest.approx([1 / 50, 1 / 60])
