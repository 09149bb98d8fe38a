"""A training process held at the point a test wants, so a kill or stop lands there without a race.

Tests that kill or stop `python -m training` mid-run used to make the run long (tens of thousands
of steps on large data) so that polling from outside caught it before it ended, and then paid for
every remaining step again in the resume. Started instead with `hold_env(...)` (the CLI, a worker,
or the page's launcher: any Python child inheriting the environment), the process trains as usual
and, between two chunks (where the engine asks whether to stop), once its run holds `checkpoints`
complete checkpoints and `chunks` more chunks have run, it writes the `held` file and waits there,
its background writers (metrics, Orbax, TensorBoard) still running. The test then kills it with
SIGKILL, asks it to stop (the stop file, as the page's Stop button does) and the run stops as
usual, or lets it go on (`release`). It holds once: not again after the `held` file exists, so a resume started with the same
environment runs straight through.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # children load this module at start (hold_site): no pytest import there
    import pytest

HOLD_ENV = "JAXDASH_TEST_HOLD"  # "<checkpoints>:<chunks>:<held file>"
HOLD_WANDB_ENV = "JAXDASH_TEST_HOLD_WANDB"  # "1": count chunks once status.json names the W&B folder
# ...and pace them: the W&B writer flushes at most every 0.5 s (writer.FLUSH_SECS), so counted chunks at least
# this far apart give its folder the rows of all but the last few of them, however fast a chunk is.
WANDB_PACE_S = 0.1
_ROOT = Path(__file__).resolve().parents[1]


def hold_env(
    env: dict[str, str], held: Path, checkpoints: int = 0, chunks: int = 1, wandb_ready: bool = False
) -> dict[str, str]:
    """`env` with the hold set: wait once `checkpoints` checkpoints exist and `chunks` more chunks ran
    (with `wandb_ready`, counted from when the W&B run exists and from the newest checkpoint, and paced by
    WANDB_PACE_S: its folder then holds the rows of all but the last of them, past that checkpoint)."""
    path = [str(_ROOT / "tests" / "hold_site"), str(_ROOT), env.get("PYTHONPATH", "")]
    return {
        **{k: v for k, v in env.items() if k != HOLD_WANDB_ENV},
        HOLD_ENV: f"{checkpoints}:{chunks}:{held}",
        **({HOLD_WANDB_ENV: "1"} if wandb_ready else {}),
        "PYTHONPATH": os.pathsep.join(p for p in path if p),
    }


def wait_held(proc: subprocess.Popen | None, held: Path, timeout: float = 240) -> None:
    """Until the process is held; fails with its stderr if it ended first."""
    deadline = time.monotonic() + timeout
    while not held.exists():
        if proc is not None and proc.poll() is not None:
            err = proc.stderr.read() if proc.stderr else ""
            err = err.decode(errors="replace") if isinstance(err, bytes) else err
            raise AssertionError(f"training ended ({proc.returncode}) before its hold:\n{err[-3000:]}")
        if time.monotonic() > deadline:
            raise AssertionError(f"training was not held within {timeout:.0f}s")
        time.sleep(0.02)


def kill_past_checkpoint(proc: subprocess.Popen, held: Path, run_dir: Path, timeout: float = 60) -> None:
    """Once `proc` is held, wait for records past its newest checkpoint (what a bad resume would lose: the held
    process's metrics thread writes them), then SIGKILL it."""
    from runstore import run_store
    from training.runs.checkpoint import latest_step

    try:
        wait_held(proc, held)
        deadline = time.monotonic() + timeout
        while max(r["step"] for r in run_store.read_metrics(run_dir)[0]) <= latest_step(run_dir):
            assert time.monotonic() < deadline, "no records past the newest checkpoint"
            time.sleep(0.02)
    finally:
        proc.kill()
        proc.wait(timeout=30)


def _released(held: Path) -> Path:
    return held.with_name(held.name + ".released")


def release(held: Path) -> None:
    """Let a held process train on to its end."""
    _released(held).touch()


def _training() -> bool:
    """Whether this process is `python -m training ...` (a run, a worker), not a page or a test."""
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    return spec is not None and spec.name.split(".")[0] == "training"


def _checkpoints(run_dir: Path) -> int:
    """Complete checkpoints (RunFolder's rule: training.runs.checkpoint would import Orbax this early)."""
    from runstore.run_folder import RunFolder

    return len(RunFolder(run_dir).checkpoint_steps())


def _checkpoints_started(run_dir: Path) -> int:
    """Checkpoints complete or still being saved: Orbax saves in the background, in "<step>.orbax-checkpoint-tmp-*"
    until it renames the folder to its step, so a save started at a chunk's end can finish while the run is held."""
    from runstore.run_folder import RunFolder

    ckpt = RunFolder(run_dir).checkpoints
    return sum(1 for p in ckpt.iterdir() if p.name.split(".", 1)[0].isdigit()) if ckpt.is_dir() else 0


def install_hold(spec: str) -> None:
    """Wrap the engine's per-chunk stop check with the hold (called by tests/hold_site/sitecustomize.py)."""
    from runstore import run_store

    checkpoints, chunks, held = spec.split(":", 2)
    need, held_file = int(checkpoints), Path(held)
    need_wandb = os.environ.get(HOLD_WANDB_ENV) == "1"
    real, polls = run_store.stop_requested, {}  # per run: a population asks once per member and chunk
    counted_from: dict[Path, int] = {}  # per run, with need_wandb: the checkpoints started when its count began

    def stop_requested(run_dir: Path) -> bool:
        if not _training():  # e.g. the dashboard server, started with this environment too
            return real(run_dir)
        if not polls and held_file.exists():  # held in an earlier process: a resume runs straight through
            return real(run_dir)
        if _checkpoints(run_dir) >= need and (
            not need_wandb or (run_store.read_status(run_dir).get("wandb") or {}).get("dir")
        ):
            started = _checkpoints_started(run_dir) if need_wandb else 0
            if need_wandb and counted_from.setdefault(run_dir, started) != started:
                # a newer checkpoint, complete or still saving: count again from it, so the held W&B folder holds
                # rows past the newest checkpoint (W&B ready late on a loaded machine once held the run right on
                # one; a background save that finished while the run was held once left none past it either)
                counted_from[run_dir], polls[run_dir] = started, 0
            polls[run_dir] = polls.get(run_dir, 0) + 1
            time.sleep(WANDB_PACE_S if need_wandb else 0.0)
        if polls.get(run_dir, 0) <= int(chunks):
            return real(run_dir)
        held_file.write_text(str(os.getpid()))
        while not real(run_dir):  # until killed, asked to stop, or released
            if _released(held_file).exists():
                return False
            time.sleep(0.05)
        return True

    run_store.stop_requested = stop_requested


def hold_children(monkeypatch: pytest.MonkeyPatch, held: Path, **hold: int) -> None:
    """Hold the training processes this test starts through the page's launcher (they inherit os.environ).

    They start cold: a warm worker this process started earlier (its pool outlives a test) runs
    without the hold, and its job would run straight through.
    """
    env = hold_env(dict(os.environ), held, **hold)
    for key in (HOLD_ENV, "PYTHONPATH"):
        monkeypatch.setenv(key, env[key])
    monkeypatch.setenv("JAXDASH_WARM_WORKER", "0")
