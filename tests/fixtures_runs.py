"""A training process held at the point a test wants, so a kill or stop lands there without a race.

Started with `hold_env(...)` (the CLI, a worker, or the page's launcher: any Python child inheriting the
environment), the process trains as usual and, between two chunks (where the engine asks whether to stop),
once `checkpoints` checkpoints are complete and `chunks` more chunks have run, it writes the `held` file and
waits there, its background writers (metrics, Orbax, TensorBoard) still running. The test then kills it
with SIGKILL, asks it to stop (the stop file, as the page's Stop button does) and the run stops as usual,
or lets it go on (`release`). It holds once: not again after the `held` file exists, so a resume started
with the same environment runs straight through.

The hold is a barrier, never a race with training: what runs beside training (wandb.init, Orbax finishing a
save) is waited for with the engine blocked between two chunks, and only what training itself makes
(checkpoints started, chunks) is counted. A test picks its run's length so that what it counts fits in it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # children load this module at start (hold_site): no pytest import there
    import pytest

HOLD_ENV = "JAXDASH_TEST_HOLD"  # "<checkpoints>:<chunks>:<held file>"
HOLD_WANDB_ENV = "JAXDASH_TEST_HOLD_WANDB"  # "1": wait for the W&B run, count chunks from the newest checkpoint
WANDB_PACE_S = 0.1  # ...and pace the counted chunks, so W&B's throttled flushes land rows between them
_ROOT = Path(__file__).resolve().parents[1]


def hold_env(
    env: dict[str, str], held: Path, checkpoints: int = 0, chunks: int = 1, wandb_ready: bool = False
) -> dict[str, str]:
    """`env` with the hold set: wait once `checkpoints` checkpoints are complete and `chunks` more chunks ran.
    With `wandb_ready` the engine first waits for the W&B run to exist, chunks are counted from the newest
    checkpoint, and the last one waits out the W&B writer's flush throttle: the held W&B folder holds the rows
    of all but the last counted chunk, past that checkpoint."""
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
    from runstore.run_folder import RunFolder
    from training.runs.checkpoint import latest_step

    try:
        wait_held(proc, held)
        deadline = time.monotonic() + timeout
        while max(r["step"] for r in RunFolder(run_dir).records()[0]) <= latest_step(run_dir):
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


def _wandb_settled(run_dir: Path) -> bool:
    """Whether the run's W&B writer is past its start: its run exists (status.json names its folder) or it failed."""
    from runstore.run_folder import RunFolder

    wandb = RunFolder(run_dir).status().get("wandb") or {}
    return bool(wandb.get("dir") or wandb.get("error"))


class _Hold:
    """The per-chunk stop check with the hold, as a barrier: what only training makes (checkpoints started,
    chunks counted) is waited for between chunks; what runs beside training (wandb.init, Orbax finishing a
    save, the W&B writer's throttled flush) is waited for while the engine is blocked, so no load, however
    uneven, lets training reach its end before the hold."""

    def __init__(self, spec: str, real: Callable[[Path], bool]) -> None:
        checkpoints, chunks, held = spec.split(":", 2)
        self.need, self.chunks, self.held_file = int(checkpoints), int(chunks), Path(held)
        self.need_wandb = os.environ.get(HOLD_WANDB_ENV) == "1"
        self.real = real
        self.polls: dict[Path, int] = {}  # per run: a population asks once per member and chunk
        self.counted_from: dict[Path, int] = {}  # per run, with need_wandb: checkpoints started when its count began

    def _wait(self, run_dir: Path, ready: Callable[[], bool]) -> bool:
        """Block the engine until `ready()`; False if a stop came first."""
        while not ready():
            if self.real(run_dir):
                return False
            time.sleep(0.02)
        return True

    def __call__(self, run_dir: Path) -> bool:
        if not _training():  # e.g. the dashboard server, started with this environment too
            return self.real(run_dir)
        if not self.polls and self.held_file.exists():  # held in an earlier process: a resume runs straight through
            return self.real(run_dir)
        if self.need_wandb and not self._wait(run_dir, lambda: _wandb_settled(run_dir)):
            return True
        started = _checkpoints_started(run_dir)
        if started < self.need:  # only more training starts them
            return self.real(run_dir)
        if not self._wait(run_dir, lambda: _checkpoints(run_dir) >= self.need):  # Orbax saves in the background
            return True
        if self.need_wandb and self.counted_from.setdefault(run_dir, started) != started:
            # a newer checkpoint: count again from it, so the held W&B folder holds rows past the newest one
            self.counted_from[run_dir], self.polls[run_dir] = started, 0
        polls = self.polls[run_dir] = self.polls.get(run_dir, 0) + 1
        if polls <= self.chunks:
            if self.need_wandb:  # the last counted chunk waits out the writer's throttle: the next one flushes
                from runwriters.wandb.writer import FLUSH_SECS

                time.sleep(FLUSH_SECS if polls == self.chunks else WANDB_PACE_S)
            return self.real(run_dir)
        return self._hold(run_dir)

    def _hold(self, run_dir: Path) -> bool:
        self.held_file.write_text(str(os.getpid()))
        while not self.real(run_dir):  # until killed, asked to stop, or released
            if _released(self.held_file).exists():
                return False
            time.sleep(0.05)
        return True


def install_hold(spec: str) -> None:
    """Wrap the engine's per-chunk stop check with the hold (called by tests/hold_site/sitecustomize.py)."""
    from runstore.run_folder import RunFolder

    real = RunFolder.stop_requested
    hold = _Hold(spec, lambda run_dir: real(RunFolder(run_dir)))
    RunFolder.stop_requested = lambda folder: hold(folder.path)


def hold_children(monkeypatch: pytest.MonkeyPatch, held: Path, **hold: int) -> None:
    """Hold the training processes this test starts through the page's launcher (they inherit os.environ).

    They start cold: a warm worker this process started earlier (its pool outlives a test) runs
    without the hold, and its job would run straight through.
    """
    env = hold_env(dict(os.environ), held, **hold)
    for key in (HOLD_ENV, "PYTHONPATH"):
        monkeypatch.setenv(key, env[key])
    monkeypatch.setenv("JAXDASH_WARM_WORKER", "0")
