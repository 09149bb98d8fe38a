"""Logged values leave the device off the training thread, in batches: what keeps `run.log` free.

`wandb.log({"loss": loss})` of a JAX array waits for the array (it converts it to a float at once),
so a per-step jitted loop waits for every step to finish before it can dispatch the next: the
device idles while Python logs. Here `log` only queues the (still computing) arrays; this thread
wakes every BATCH_S, takes everything queued, fetches it with one `jax.device_get` (the one host/
device sync point, on this thread) and hands the values to the run's writers.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import queue
import sys
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

log = logging.getLogger("jaxdash")

NICE = int(os.environ.get("JAXDASH_FETCH_NICE", "19"))  # the writers run when the loop leaves a core idle
BATCH_S = 0.1  # how long values wait at most before they are fetched (the page refreshes every 0.5 s)
MAX_PENDING = 100_000  # steps queued before `log` waits for this thread (backpressure, not unbounded memory)
HISTOGRAM_MAX = 1_000_000  # elements: bigger arrays are skipped with a warning, not copied to the host

Entry = tuple[int, dict[str, Any], int]  # (first step, values, steps: 0 for one step's values)
_STOP = object()


def _fetch(batch: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every value of every entry on the host: one `jax.device_get` for the whole batch (if JAX is in use)."""
    jax = sys.modules.get("jax")
    return jax.device_get(batch) if jax is not None else batch  # sync point: waits for the arrays, here only


class Split:
    """A step's fetched values split by kind, with one warning per key for values that are no metric."""

    def __init__(self, warn: Callable[[str, str], None]) -> None:
        self.warn = warn

    def __call__(self, values: Mapping[str, Any]) -> tuple[dict[str, float], dict[str, np.ndarray]]:
        scalars, histograms = {}, {}
        for key, value in values.items():
            arr = np.asarray(value) if not isinstance(value, (int, float)) else None
            if arr is None or arr.size == 1:
                number = float(value if arr is None else arr.reshape(()))
                if not math.isfinite(number):
                    self.warn(key, f"{key}: {number} logged (kept; the charts show a gap there)")
                scalars[key] = number
            elif arr.dtype.kind in "biuf" and 0 < arr.size <= HISTOGRAM_MAX:
                histograms[key] = arr
            else:
                self.warn(key, f"{key}: an array of shape {arr.shape} and dtype {arr.dtype} is no metric; not logged")
        return scalars, histograms


class Fetcher:
    """The background thread: batches queued steps, fetches them, writes them through `write`."""

    def __init__(self, write: Callable[[list[tuple[int, dict[str, float], dict[str, np.ndarray]]]], None]) -> None:
        self.pending: queue.Queue = queue.Queue(MAX_PENDING)
        self.write = write
        self.warned: set[str] = set()
        self.split = Split(self._warn_once)
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._loop, name="jaxdash-fetch", daemon=True)
        self.thread.start()

    def _warn_once(self, key: str, message: str) -> None:
        if key not in self.warned:
            self.warned.add(key)
            log.warning(message)

    def put(self, step: int, values: dict[str, Any], steps: int = 0) -> None:
        """Queue one step's values, or with `steps` a chunk's (arrays with a leading axis of `steps`).

        Device arrays stay untouched here; blocks only when MAX_PENDING entries wait.
        """
        self.pending.put((step, values, steps))

    def close(self, timeout: float | None = None) -> None:
        """Fetch and write everything queued, then end the thread."""
        self.pending.put(_STOP)
        self.thread.join(timeout)

    def _loop(self) -> None:
        with contextlib.suppress(OSError, AttributeError):  # Linux: a thread has its own nice value
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), NICE)
        done = False
        while not done:
            entries: list[Entry] = []
            item = self.pending.get()
            time.sleep(BATCH_S)  # let a batch gather: one fetch for many steps
            while True:
                if item is _STOP:
                    done = True
                else:
                    entries.append(item)
                try:
                    item = self.pending.get_nowait()
                except queue.Empty:
                    break
            if entries and self.error is None:
                self._write_batch(entries)

    def _write_batch(self, entries: list[Entry]) -> None:
        try:
            fetched = _fetch([values for _, values, _ in entries])
            rows = []
            for (step, _, steps), values in zip(entries, fetched, strict=True):
                if not steps:
                    rows.append((step, *self.split(values)))
                    continue
                for i in range(steps):  # a chunk from lax.scan: one row per step, on the host
                    rows.append((step + i, *self.split({k: np.asarray(v)[i] for k, v in values.items()})))
            self.write(rows)
        except Exception as exc:  # noqa: BLE001 - the training loop must never die of logging
            self.error = exc
            log.error("jaxdash: logging stopped: %s: %s", type(exc).__name__, exc)
