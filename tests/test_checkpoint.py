"""Checkpoints and resume: a stopped or killed run continues to exactly the uninterrupted result.

"Exactly": the resumed run logs each step once (run store, TensorBoard), with the values an
uninterrupted run with the same seed logs, and ends with the same final metrics.
"""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tensorboard.backend.event_processing import event_accumulator as ea

from runstore import run_folder, run_store
from runstore.run_folder import RunFolder
from runwriters.base import Tracking
from tests.fixtures_runs import hold_env, kill_past_checkpoint
from tests.test_data import write_idx_dataset
from training.errors import CannotResume
from training.runs.checkpoint import Checkpointer, checkpoint_steps, latest_step, resume_point, truncate_metrics
from training.runs.resume import resume
from training.runs.run import NewRuns, execute

ROOT = Path(__file__).resolve().parents[1]
VOLATILE = ("wall", "ts", "perf/steps_per_sec", "sys/cpu_percent", "sys/rss_mb")  # differ between any two runs


def records(run_dir: Path) -> list[dict]:
    """metrics.jsonl without the fields that differ between two identical runs."""
    return [{k: v for k, v in r.items() if k not in VOLATILE} for r in RunFolder(run_dir).records()[0]]


def run(task: str, cfg: dict, run_dir: Path, wandb_mode: str = "auto", tensorboard: bool = True) -> tuple[str, object]:
    """Train one run into `run_dir`; (final state, result)."""
    tracking = Tracking(wandb_mode, tensorboard, console=False)
    ((_, state, result),) = execute(task, [cfg], NewRuns(run_dir=run_dir), tracking=tracking)
    return state, result


def resume_one(run_dir: Path) -> tuple[str, object]:
    ((_, state, result),) = resume(run_dir, console=False)
    return state, result


def tb_steps(run_dir: Path, tag: str = "train/loss") -> list[int]:
    logdir = RunFolder(run_dir).status()["tensorboard"]["logdir"]
    acc = ea.EventAccumulator(str(logdir), size_guidance={ea.SCALARS: 0})
    acc.Reload()
    return [e.step for e in acc.Scalars(tag)]


def stop_once_at(monkeypatch: pytest.MonkeyPatch, run_dir: Path, polls: int) -> None:
    """Drop a real stop file into `run_dir` at the `polls`-th stop check (one per chunk), once."""
    real, seen = RunFolder.stop_requested, []

    def stop_requested(folder: RunFolder) -> bool:
        if folder.path == run_dir:
            seen.append(folder.path)
            if len(seen) == polls:
                RunFolder(run_dir).request_stop()
        return real(folder)

    monkeypatch.setattr(RunFolder, "stop_requested", stop_requested)


def test_stopped_regression_resumes_to_the_uninterrupted_result(runs_root, monkeypatch):
    cfg = {"steps": 300, "log_every": 10, "ckpt_every": 50, "optimizer": "adam", "lr": 0.02}
    full, part = runs_root / "full", runs_root / "part"
    assert run("regression", cfg, full, wandb_mode="disabled")[0] == "finished"
    stop_once_at(monkeypatch, part, 12)  # after the 12th chunk of 10 steps
    state, _ = run("regression", cfg, part, wandb_mode="offline")
    assert state == "stopped" and latest_step(part) == 120  # saved at the stop, beyond the periodic 100
    assert RunFolder(part).status()["step"] == 120

    state, result = resume_one(part)
    status = RunFolder(part).status()
    assert state == "finished" and status["state"] == "finished" and status["resumed_from"] == 120
    assert records(part) == records(full)  # one record per step, same values
    assert result.final == run_store.read_json(full / run_folder.FINAL_METRICS)
    assert tb_steps(part) == tb_steps(full) == list(range(0, 301, 10))
    # W&B: the same run id continued in a second offline folder; the sync command uploads both, in order.
    folders = sorted(glob.glob(str(part / run_folder.WANDB / "offline-run-*")))
    # offline-run-<time>-<id>, with "-1" appended by wandb when both processes started in the same second
    assert len(folders) == 2 and all(f"-{status['wandb']['id']}" in Path(f).name for f in folders)
    assert status["wandb"]["sync_command"] == "wandb sync " + " ".join(folders)


def test_stopped_mnist_resumes_mid_epoch(runs_root, monkeypatch, tmp_path):
    write_idx_dataset(tmp_path / "idx", n_train=700, n_test=150, seed=3)
    # 21 steps per epoch in chunks of 8, 8, 5; eval every 10 steps; checkpoints only at stop and end.
    cfg = {"data_dir": str(tmp_path / "idx"), "log_every": 8, "epochs": 2, "eval_every": 10, "ckpt_every": 0}
    full, part = runs_root / "full", runs_root / "part"
    run("mnist", cfg, full, wandb_mode="disabled")
    stop_once_at(monkeypatch, part, 4)  # after chunk 4 = step 29, epoch 2's first chunk
    assert run("mnist", cfg, part, wandb_mode="disabled")[0] == "stopped"
    assert checkpoint_steps(part) == [21, 29]  # the epoch end and the stop
    state, result = resume_one(part)
    assert state == "finished" and result.steps == 42
    assert records(part) == records(full)
    assert tb_steps(part) == tb_steps(full) == [0, 8, 16, 21, 29, 37, 42]
    assert tb_steps(part, "test/acc") == [16, 21, 37, 42]
    assert result.final == run_store.read_json(full / run_folder.FINAL_METRICS)


def test_killed_run_resumes_from_its_last_checkpoint(runs_root, tmp_path):
    # SIGKILL while held between two chunks past two periodic checkpoints, then `python -m training resume`.
    args = ["--points", "10000", "--steps", "5000", "--log-every", "100", "--ckpt-every", "1000"]
    args += ["--optimizer", "adam", "--lr", "0.01"]
    run_dir, held = runs_root / "killed", tmp_path / "held"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    cmd = [
        sys.executable,
        "-m",
        "training",
        "regression",
        "--run-dir",
        str(run_dir),
        "--wandb",
        "disabled",
        "--quiet",
        *args,
    ]
    proc = subprocess.Popen(
        cmd,
        cwd=ROOT,
        env=hold_env(env, held, checkpoints=2, chunks=3),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    kill_past_checkpoint(proc, held, run_dir)
    status = RunFolder(run_dir).status()
    assert status["state"] == "crashed", proc.stderr.read().decode()[-2000:]  # it died mid-run
    # Normally the newest checkpoint; the one before if the kill beat that step's metrics to disk.
    ckpt_step = resume_point(run_dir)
    assert ckpt_step in checkpoint_steps(run_dir) and 1_000 <= ckpt_step < 5_000

    out = subprocess.run(
        [sys.executable, "-m", "training", "resume", str(run_dir), "--quiet"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    line = json.loads(out.stdout.strip().splitlines()[-1])
    assert line["state"] == "finished" and line["resumed_from"] == ckpt_step
    steps = [r["step"] for r in RunFolder(run_dir).records()[0]]
    assert steps == list(range(0, 5_001, 100))  # records past the checkpoint were dropped, then logged once
    assert tb_steps(run_dir) == steps  # TensorBoard purged the killed process's events past the checkpoint

    from training.runs.in_memory import train
    from training.tasks.regression import RegressionConfig, RegressionTask

    cfg = RegressionConfig(points=10_000, steps=5_000, log_every=100, optimizer="adam", lr=0.01)
    assert line["final"] == train(RegressionTask, cfg)[0].final  # same process-independent result


def test_what_cannot_be_resumed(runs_root, tmp_path):
    with pytest.raises(CannotResume, match="not a run directory"):
        resume(tmp_path)
    run_dir = runs_root / "done"
    run(
        "regression", {"steps": 20, "log_every": 10, "ckpt_every": 0}, run_dir, wandb_mode="disabled", tensorboard=False
    )
    assert latest_step(run_dir) == 20  # ckpt_every=0 still saves at the end
    with pytest.raises(CannotResume, match="already finished"):
        resume(run_dir)
    RunFolder(run_dir).write_status(state="stopped")
    (run_dir / run_folder.CHECKPOINTS / "20").rename(
        run_dir / run_folder.CHECKPOINTS / "20.orbax-checkpoint-tmp-1"
    )  # as a save cut short
    with pytest.raises(CannotResume, match="no checkpoint"):
        resume(run_dir)


def test_truncate_metrics_keeps_steps_up_to_the_checkpoint(tmp_path):
    RunFolder(tmp_path).append_records(
        [{"step": s, "train/loss": float("nan") if s == 30 else 1.0} for s in (10, 20, 30)]
    )
    assert truncate_metrics(tmp_path, 20) == 1
    assert [r["step"] for r in RunFolder(tmp_path).records()[0]] == [10, 20]
    assert truncate_metrics(tmp_path, 20) == 0


def test_resume_point_is_the_newest_checkpoint_with_its_metrics_on_disk(tmp_path):
    for step in ("100", "200", "300.orbax-checkpoint-tmp-7"):  # the last one a save cut short
        (tmp_path / run_folder.CHECKPOINTS / step).mkdir(parents=True)
    assert resume_point(tmp_path) is None  # nothing logged yet
    RunFolder(tmp_path).append_records([{"step": s} for s in range(10, 191, 10)])
    assert checkpoint_steps(tmp_path) == [100, 200] and resume_point(tmp_path) == 100  # step 200's record was lost
    RunFolder(tmp_path).append_records([{"step": 200}])
    assert resume_point(tmp_path) == 200


def test_a_save_returns_once_the_arrays_are_copied_out_and_orbax_writes_behind_it(tmp_path):
    """The training thread never waits for Orbax's save call (~30 ms even for a small state)."""
    import threading

    import numpy as np

    ckpt = Checkpointer(tmp_path)
    release, saving_threads = threading.Event(), []
    orbax_save = ckpt.manager.save

    def held_save(*args, **kwargs):  # Orbax's own save, held until the test lets it go
        saving_threads.append(threading.current_thread().name)
        release.wait(10)
        return orbax_save(*args, **kwargs)

    ckpt.manager.save = held_save
    arrays = {"w": np.arange(6.0).reshape(2, 3)}
    started = time.monotonic()
    ckpt.save(10, arrays, {"step": 10})
    assert time.monotonic() - started < 5  # returned while Orbax's save was held
    arrays["w"][:] = -1  # the caller may reuse its buffers at once: the save holds its own copy
    release.set()
    ckpt.close()
    assert saving_threads and saving_threads[0].startswith("orbax") and checkpoint_steps(tmp_path) == [10]
    restored, meta = Checkpointer(tmp_path, resume_step=10).restore({"w": np.zeros((2, 3))})
    assert np.array_equal(restored["w"], np.arange(6.0).reshape(2, 3)) and meta == {"step": 10}


def test_a_task_given_by_a_relative_file_path_resumes_from_another_folder(tmp_path):
    run_dir = tmp_path / "sine"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    started = subprocess.run(
        [
            sys.executable,
            "-m",
            "training",
            "examples/sine.py:SineTask",
            "--steps",
            "300",
            "--log-every",
            "50",
            "--run-dir",
            str(run_dir),
            "--wandb",
            "disabled",
            "--no-tensorboard",
            "--quiet",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert started.returncode == 0, started.stderr[-2000:]
    spec = run_store.read_json(run_dir / run_folder.CONFIG)["task_spec"]
    assert spec == f"{ROOT / 'examples' / 'sine.py'}:SineTask"  # stored absolute
    RunFolder(run_dir).write_status(state="stopped")  # as if stopped at its end checkpoint's step
    out = subprocess.run(
        [sys.executable, "-m", "training", "resume", str(run_dir), "--quiet"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr[-2000:]
    assert json.loads(out.stdout.strip().splitlines()[-1])["resumed_from"] == 300
