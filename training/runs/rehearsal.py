"""The warm worker's rehearsal: tiny runs that warm a fresh process while it waits for a Start.

Importing is not all of a cold start: a process's first run also traces and lowers its first
programs and creates data with op-by-op JAX calls. The worker says "ready" once imported, then
rehearses in memory: regression for a few steps and the MNIST model on 256 synthetic images.

A Start never waits for the rehearsal: when a job arrives on stdin the rehearsal is abandoned where
it is (SIGUSR1 raises in the main thread; in memory it leaves no files and no threads of its own)
and the job runs. $JAXDASH_REHEARSE=0 turns it off; a rehearsal that fails is noted on stderr.
"""

from __future__ import annotations

import logging
import os
import select
import signal
import sys
import threading
from collections.abc import Callable
from typing import Any

POLL_S = 0.02


def job_waiting() -> bool:
    """Whether a job line is waiting on stdin (without reading it)."""
    try:
        return bool(select.select([sys.stdin], [], [], 0)[0])
    except (OSError, ValueError):  # stdin closed or not selectable: nothing to wait for
        return False


def _synthetic_mnist() -> type:
    """The MNIST task on 256 random images: its model's programs without reading a dataset."""
    import numpy as np

    from training.tasks.base import Data
    from training.tasks.mnist import MnistTask, scaled

    class SyntheticMnist(MnistTask):
        def load_data(self) -> Data:
            rng = np.random.default_rng(0)
            images = rng.integers(0, 256, (256, 28, 28), dtype=np.uint8)
            labels = rng.integers(0, 10, 256).astype(np.int32)
            batch = {"image": scaled(images), "label": labels}
            return Data(train=batch, test=batch, host={"test_images": images, "test_labels": labels})

    return SyntheticMnist


def _jobs() -> list[Callable[[], object]]:
    """The rehearsal's runs, in memory."""
    from training.runs.in_memory import train
    from training.tasks.mnist import MnistConfig
    from training.tasks.regression import RegressionConfig

    return [
        lambda: train("regression", RegressionConfig(steps=20)),
        lambda: train(_synthetic_mnist(), MnistConfig(epochs=1)),
    ]


class _Abandon(BaseException):
    """Raised in the main thread to drop the rehearsal at once (not an Exception: nothing catches it)."""


_lock = threading.Lock()
_state = {"rehearsing": False}


RETRY_S = 0.01  # an abandon that came during an import is tried again this much later


def _importing(frame: Any) -> bool:
    """True while the interrupted code runs inside an import (a module's top level, or importlib's own)."""
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib"):
            return True
        frame = frame.f_back
    return False


def _on_signal(signum: int, frame: Any) -> None:
    """Abandon the rehearsal, but never in the middle of an import.

    An exception raised inside an import leaves the module out of sys.modules while what it
    registered stays registered: jaxlib's MLIR dialects then fail the real run's first compile
    with "Dialect namespace 'mhlo' is already registered". So the signal is sent again shortly.
    """
    if not _state["rehearsing"]:
        return
    if _importing(frame):
        threading.Timer(RETRY_S, os.kill, (os.getpid(), signal.SIGUSR1)).start()
        return
    raise _Abandon


RESEND_S = 0.25  # an abandon the main thread swallowed is sent again this much later


def _abandon_when_a_job_arrives(done: threading.Event) -> None:
    """Once a job waits on stdin, signal the main thread until the rehearsal has ended.

    One signal is not enough: a raise that lands in a gc callback (JAX's `_xla_gc_callback`) or a
    `__del__` is only reported by Python, and the rehearsal would run on to its end (41.6 s seen).
    """
    while not job_waiting():
        if done.wait(POLL_S):
            return
    while True:
        with _lock:
            if not _state["rehearsing"]:
                return
            os.kill(os.getpid(), signal.SIGUSR1)
        if done.wait(RESEND_S):
            return


def rehearse() -> None:
    """Run the rehearsal in this (main) thread, giving way to a job on stdin at once."""
    if os.environ.get("JAXDASH_REHEARSE", "1") == "0":
        return
    done = threading.Event()
    previous = signal.signal(signal.SIGUSR1, _on_signal)
    logging.disable(logging.WARNING)  # the rehearsal's notes are not the real run's
    _state["rehearsing"] = True
    threading.Thread(target=_abandon_when_a_job_arrives, args=(done,), daemon=True).start()
    try:
        for job in _jobs():
            job()
    except _Abandon:
        pass
    except Exception as exc:  # noqa: BLE001 - a rehearsal must never keep the worker from its job
        print(f"warm worker: rehearsal failed ({type(exc).__name__}: {exc}); going on without it", file=sys.stderr)
    finally:
        with _lock:
            _state["rehearsing"] = False  # from here on a late signal raises nothing
        done.set()
        signal.signal(signal.SIGUSR1, previous)
        logging.disable(logging.NOTSET)
