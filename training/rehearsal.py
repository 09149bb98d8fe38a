"""The warm worker's rehearsal: tiny runs that warm a fresh process while it waits for a Start.

Importing is not all of a cold start: a process's first run also traces and lowers its first
programs, creates data with op-by-op JAX calls, imports Orbax and opens its writers. The worker
says "ready" once imported, then rehearses a tiny regression run (and MNIST on a dataset found
locally) in a temporary folder. Measured in one process: a regression run's first record came
0.09-0.10 s after its start instead of 0.49-0.57 s; Fashion-MNIST's 1.0-1.3 s instead of 2.0-2.8 s.

A Start never waits for the rehearsal: when a job arrives on stdin the rehearsing run is asked to
stop (its stop file, honoured after the current chunk) and no further rehearsal starts.
$JAXDASH_REHEARSE=0 turns it off; a rehearsal that fails is only noted on stderr.
"""

from __future__ import annotations

import logging
import os
import select
import shutil
import sys
import tempfile
import threading
from pathlib import Path

REGRESSION = {"steps": 20}
MNIST = {"train_limit": 256, "test_limit": 256, "epochs": 1}
POLL_S = 0.02


def job_waiting() -> bool:
    """Whether a job line is waiting on stdin (without reading it)."""
    try:
        return bool(select.select([sys.stdin], [], [], 0)[0])
    except (OSError, ValueError):  # stdin closed or not selectable: nothing to wait for
        return False


def _jobs() -> list[tuple[str, dict]]:
    from training import data

    local = [name for name in data.DATASET_SIZES if data.find_local(name) is not None]
    return [("regression", REGRESSION)] + [("mnist", {**MNIST, "dataset": name}) for name in local[:1]]


def _stop_when_a_job_arrives(folder: Path, done: threading.Event, interrupted: threading.Event) -> None:
    from training import run_store

    while not done.wait(POLL_S):
        if job_waiting():
            interrupted.set()
            for run_dir in folder.iterdir():
                run_store.request_stop(run_dir)
            return


def rehearse() -> None:
    """Run the rehearsal in a temporary folder (removed after), giving way to a job at once."""
    if os.environ.get("JAXDASH_REHEARSE", "1") == "0":
        return
    from training.run import execute

    folder = Path(tempfile.mkdtemp(prefix="jaxdash-rehearsal-"))
    done, interrupted = threading.Event(), threading.Event()
    threading.Thread(target=_stop_when_a_job_arrives, args=(folder, done, interrupted), daemon=True).start()
    logging.disable(logging.WARNING)  # the rehearsal's "not supported" notes are not the real run's
    try:
        for task, cfg in _jobs():
            if interrupted.is_set():
                break
            execute(task, [cfg], root=folder, wandb_mode="disabled", console=False)
    except Exception as exc:  # noqa: BLE001 - a rehearsal must never keep the worker from its job
        print(f"warm worker: rehearsal failed ({type(exc).__name__}: {exc}); going on without it", file=sys.stderr)
    finally:
        done.set()
        logging.disable(logging.NOTSET)
        shutil.rmtree(folder, ignore_errors=True)
