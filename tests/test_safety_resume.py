"""A failed resume destroys nothing (#23, item 3): a run killed with kill -9 whose newest checkpoint is
torn resumes from the intact one before it, and a run whose every checkpoint is damaged refuses in
one line with its files byte-identical. Real subprocesses of `python -m training`."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest
from tensorboard.backend.event_processing import event_accumulator as ea

from runstore import run_folder
from runstore.run_folder import RunFolder
from tests.fixtures_runs import hold_env, kill_past_checkpoint
from training.runs.checkpoint import checkpoint_steps, latest_step, resume_point

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONUNBUFFERED": "1", "WANDB_MODE": "disabled"}
STEPS, LOG_EVERY = 5_000, 100


@pytest.fixture(scope="module")
def killed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A regression run killed with SIGKILL, held between chunks past two periodic checkpoints."""
    folder = tmp_path_factory.mktemp("killed")
    run_dir, held = folder / "run", folder / "held"
    args = ["--points", "10000", "--steps", str(STEPS), "--log-every", str(LOG_EVERY), "--ckpt-every", "1000"]
    cmd = [sys.executable, "-m", "training", "regression", "--run-dir", str(run_dir), "--quiet", *args]
    env = hold_env(ENV, held, checkpoints=2, chunks=3)
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    kill_past_checkpoint(proc, held, run_dir)
    assert RunFolder(run_dir).status()["state"] == "crashed", proc.stderr.read().decode()[-2000:]
    return run_dir


def copy_of(run_dir: Path, name: str) -> Path:
    """A copy of the run under the same folder name (its TensorBoard run is named after it)."""
    dest = run_dir.parent.parent / name / run_dir.name
    dest.parent.mkdir()
    subprocess.run(["cp", "-a", str(run_dir), str(dest)], check=True)
    return dest


def tear(checkpoint: Path) -> None:
    """Truncate every array file of a checkpoint to half its size, as a kill mid-write could."""
    files = [f for f in (checkpoint / "arrays").rglob("*") if f.is_file() and f.parent.name == "d"]
    assert files
    for f in files:
        os.truncate(f, f.stat().st_size // 2)


def resume_cli(run_dir: Path) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "training", "resume", str(run_dir), "--quiet"]
    return subprocess.run(cmd, cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=300)


def tb_steps(run_dir: Path, original: Path, tag: str = "train/loss") -> list[int]:
    """The steps of `tag` in the copy's own TensorBoard logdir (status.json names the original's)."""
    logdir = Path(RunFolder(run_dir).status()["tensorboard"]["logdir"])
    logdir = run_dir / logdir.relative_to(original) if logdir.is_relative_to(original) else logdir
    acc = ea.EventAccumulator(str(logdir), size_guidance={ea.SCALARS: 0})
    acc.Reload()
    return [e.step for e in acc.Scalars(tag)]


def fingerprint(run_dir: Path) -> dict[str, str]:
    """Hashes of metrics.jsonl, status.json and every TensorBoard file."""
    files = [
        run_dir / run_folder.RECORDS,
        run_dir / run_folder.STATUS,
        *sorted((run_dir / run_folder.TENSORBOARD).rglob("*events*")),
    ]
    return {str(f.relative_to(run_dir)): hashlib.sha256(f.read_bytes()).hexdigest() for f in files}


@pytest.mark.parametrize("damage", ["torn arrays", "empty metadata"])
def test_a_damaged_newest_checkpoint_resumes_from_the_one_before(killed: Path, damage: str) -> None:
    run_dir = copy_of(killed, damage.replace(" ", "-"))
    newest, before = (
        resume_point(run_dir),
        sorted(checkpoint_steps(run_dir))[-2],
    )  # the one before the newest (a slow kill leaves more)
    assert newest == latest_step(run_dir) and before < newest
    if damage == "torn arrays":
        tear(run_dir / run_folder.CHECKPOINTS / str(newest))
    else:
        (run_dir / run_folder.CHECKPOINTS / str(newest) / "_CHECKPOINT_METADATA").write_text("")
    out = resume_cli(run_dir)
    assert out.returncode == 0, out.stderr[-3000:]
    warning = [ln for ln in out.stderr.splitlines() if ln.startswith("warning: checkpoint")]
    assert (
        len(warning) == 1
        and f"{run_folder.CHECKPOINTS}/{newest}" in warning[0]
        and f"resuming from step {before}" in warning[0]
    )
    assert len(warning[0]) < 500
    status = RunFolder(run_dir).status()
    assert status["state"] == "finished" and status["resumed_from"] == before
    steps = [r["step"] for r in RunFolder(run_dir).records()[0]]
    assert steps == list(range(0, STEPS + 1, LOG_EVERY))  # every step exactly once
    assert tb_steps(run_dir, killed) == steps  # TensorBoard cut back once, after the restore


def test_every_checkpoint_damaged_refuses_and_changes_nothing(killed: Path) -> None:
    run_dir = copy_of(killed, "all-torn")
    for step in checkpoint_steps(run_dir):
        tear(run_dir / run_folder.CHECKPOINTS / str(step))
    before = fingerprint(run_dir)
    out = resume_cli(run_dir)
    assert out.returncode != 0
    errors = [ln for ln in out.stderr.splitlines() if "every checkpoint is damaged" in ln]
    assert len(errors) == 1 and "Nothing was changed" in errors[0] and "Traceback" not in out.stderr
    assert fingerprint(run_dir) == before
    assert RunFolder(run_dir).status()["state"] == "crashed"
