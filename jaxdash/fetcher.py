"""Logged values leave the device off the training thread, in batches: what keeps `run.log` free.

`wandb.log({"loss": loss})` of a JAX array waits for the array (it converts it to a float at once),
so a per-step jitted loop waits for every step to finish before it can dispatch the next: the
device idles while Python logs. Here `log` only queues the (still computing) arrays; this thread
wakes every BATCH_S, takes everything queued, fetches it with one `jax.device_get` (the one host/
device sync point, on this thread) and hands the values to the run's writers.
"""

from __future__ import annotations

import collections
import contextlib
import logging
import math
import os
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


def _fetch(batch: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every value of every entry on the host (if JAX is in use): the sync point, here only.

    On an accelerator one `jax.device_get` for the whole batch starts every copy before waiting for
    any. On the CPU backend the arrays already live in host memory and `np.asarray` reads each in
    ~1 us where `device_get`'s per-array copy machinery takes ~8 us (measured on this machine),
    time this thread holds the GIL the training loop wants.
    """
    jax = sys.modules.get("jax")
    if jax is None:
        return batch
    if jax.default_backend() != "cpu":
        return jax.device_get(batch)
    return [{k: np.asarray(v) if isinstance(v, jax.Array) else v for k, v in values.items()} for values in batch]


class Split:
    """A step's fetched values split by kind, with one warning per key for values that are no metric."""

    def __init__(self, warn: Callable[[str, str], None]) -> None:
        self.warn = warn

    def __call__(self, values: Mapping[str, Any]) -> tuple[dict[str, float], dict[str, np.ndarray]]:
        scalars, histograms = {}, {}
        for key, value in values.items():
            if isinstance(value, (int, float)):
                number = float(value)
            else:
                arr = value if type(value) is np.ndarray else np.asarray(value)  # fetched: no copy, no sync
                if arr.size != 1:
                    if arr.dtype.kind in "biuf" and 0 < arr.size <= HISTOGRAM_MAX:
                        histograms[key] = arr
                    else:
                        self.warn(
                            key, f"{key}: an array of shape {arr.shape} and dtype {arr.dtype} is no metric; not logged"
                        )
                    continue
                number = float(arr.item())
            if not math.isfinite(number):
                self.warn(key, f"{key}: {number} logged (kept; the charts show a gap there)")
            scalars[key] = number
        return scalars, histograms


class Fetcher:
    """The background thread: batches queued steps, fetches them, writes them through `write`.

    The queue is a deque: `append` from the training thread and `popleft` here are atomic under the
    GIL, so `put` costs ~0.1 us and never takes a lock this thread may hold (a `queue.Queue` put
    was half of `run.log`'s 5 us).
    """

    def __init__(self, write: Callable[[list[tuple[int, dict[str, float], dict[str, np.ndarray]]]], None]) -> None:
        self.pending: collections.deque[Entry] = collections.deque()
        self.write = write
        self.warned: set[str] = set()
        self.split = Split(self._warn_once)
        self.error: BaseException | None = None
        self.closing = threading.Event()
        self.thread = threading.Thread(target=self._loop, name="jaxdash-fetch", daemon=True)
        self.thread.start()

    def _warn_once(self, key: str, message: str) -> None:
        if key not in self.warned:
            self.warned.add(key)
            log.warning(message)

    def put(self, step: int, values: dict[str, Any], steps: int = 0) -> None:
        """Queue one step's values, or with `steps` a chunk's (arrays with a leading axis of `steps`).

        Device arrays stay untouched here; waits only while MAX_PENDING entries wait (backpressure).
        """
        while len(self.pending) >= MAX_PENDING and self.thread.is_alive():
            time.sleep(BATCH_S / 10)
        self.pending.append((step, values, steps))

    def close(self, timeout: float | None = None) -> None:
        """Fetch and write everything queued, then end the thread."""
        self.closing.set()
        self.thread.join(timeout)

    def _loop(self) -> None:
        with contextlib.suppress(OSError, AttributeError):  # Linux: a thread has its own nice value
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), NICE)
        done = False
        while not done:
            done = self.closing.wait(BATCH_S)  # let a batch gather: one fetch for many steps
            entries: list[Entry] = []
            with contextlib.suppress(IndexError):
                while True:
                    entries.append(self.pending.popleft())
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
