"""A training process held at the point a test wants, so a kill or stop lands there without a race.

Tests that kill `python -m training` mid-run used to make the run long (tens of thousands of
steps on large data) so that polling from outside caught it before it ended, and then paid for
every remaining step again in the resume. Run instead as `python -m tests.fixtures_runs <training
args>` with `hold_env(...)`: the process trains as usual and, between two chunks (where the engine
asks whether to stop), once it holds `checkpoints` complete checkpoints and `chunks` more chunks
have run, it writes the `held` file and waits there, its background writers (metrics, Orbax,
TensorBoard) still running. The test then kills it with SIGKILL, or asks it to stop (the stop
file), and the run goes on to stop as usual. It holds once: not again after the `held` file exists,
so a resume started with the same environment runs straight through.

With `pace` > 0 it never stops: from that point each chunk waits `pace` seconds, so writers fed
from the training thread (W&B's buffered rows) keep flushing while the test waits for what it needs.
"""

from __future__ import annotations

import os
import runpy
import subprocess
import sys
import time
from pathlib import Path

HOLD_ENV = "JAXDASH_TEST_HOLD"  # "<checkpoints>:<chunks>:<pace>:<held file>"


def held_command(*training_args: str) -> list[str]:
    """`python -m training <args>` run through the hold (see the module docstring)."""
    return [sys.executable, "-m", "tests.fixtures_runs", *training_args]


def hold_env(
    env: dict[str, str], held: Path, checkpoints: int = 0, chunks: int = 1, pace: float = 0.0
) -> dict[str, str]:
    """`env` with the hold set: wait once `checkpoints` checkpoints exist and `chunks` more chunks ran
    (with `pace`: from then on, wait `pace` seconds after each chunk)."""
    root = str(Path(__file__).resolve().parents[1])
    path = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
    return {**env, HOLD_ENV: f"{checkpoints}:{chunks}:{pace}:{held}", "PYTHONPATH": path}


def wait_held(proc: subprocess.Popen, held: Path, timeout: float = 240) -> None:
    """Until the process is held; fails with its stderr if it ended first."""
    deadline = time.monotonic() + timeout
    while not held.exists():
        if proc.poll() is not None:
            err = proc.stderr.read() if proc.stderr else ""
            err = err.decode(errors="replace") if isinstance(err, bytes) else err
            raise AssertionError(f"training ended ({proc.returncode}) before its hold:\n{err[-3000:]}")
        if time.monotonic() > deadline:
            raise AssertionError(f"training was not held within {timeout:.0f}s")
        time.sleep(0.02)


def _install_hold(spec: str) -> None:
    """Wrap the engine's per-chunk stop check with the hold."""
    from runstore import run_store
    from training.runs.checkpoint import checkpoint_steps

    checkpoints, chunks, pace, held = spec.split(":", 3)
    need, held_file, wait = int(checkpoints), Path(held), float(pace)
    real, polls = run_store.stop_requested, [0]

    def stop_requested(run_dir: Path) -> bool:
        if not polls[0] and held_file.exists():  # held in an earlier process: a resume runs straight through
            return real(run_dir)
        if len(checkpoint_steps(run_dir)) >= need:
            polls[0] += 1
        if polls[0] <= int(chunks):
            return real(run_dir)
        held_file.write_text(str(os.getpid()))
        if wait:
            time.sleep(wait)
            return real(run_dir)
        while not real(run_dir):  # until killed, or asked to stop
            time.sleep(0.05)
        return True

    run_store.stop_requested = stop_requested


if __name__ == "__main__":
    _install_hold(os.environ[HOLD_ENV])
    sys.argv = ["training", *sys.argv[1:]]
    runpy.run_module("training", run_name="__main__", alter_sys=True)
