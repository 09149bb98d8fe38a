"""Builds runs' metrics caches ahead of time: one low-priority background thread per server.

Without it, the first open of a big finished run parses its whole metrics.jsonl (seconds per
million records) while the user waits. The run watcher (runstore/run_watch.py) reports every run
it sees for the first time and every run whose state changed (finished, failed, resumed); this
thread extends those runs' caches (`metric_cache.sync`) one run and one ~4 MB part at a time, at
the lowest CPU priority, parsing in its own thread only (Arrow's shared pool is left to the
pages). Between parts it lets go of the run's lock: a page opening the run meanwhile finishes the
rest itself, never waiting for more than one part. Once a run's parts are cached it saves the
run's thinned columns (runstore/metrics/metric_overview.py), so a server's first open of the run reads
one small file instead of thinning every part. Active runs are revisited every `ACTIVE_EVERY_S`,
so a long run's Live page also opens on a cache. No Streamlit here.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Iterable
from pathlib import Path

from runstore.metrics import metric_cache, metric_overview
from runstore.metrics.metric_table import MetricTable
from runstore.run_folder import RunFolder

MIN_BYTES = metric_cache.MIN_GROWTH  # smaller files: a page parses them itself in a blink
ACTIVE_EVERY_S = 30.0  # an active run's cache is brought up to date this often
NICE = 19  # the lowest priority: pages and training processes go first


def _lower_priority() -> None:
    """This thread (a Linux task of its own) at nice NICE; elsewhere it keeps its priority."""
    with contextlib.suppress(AttributeError, OSError):
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), NICE)


def _size(run_dir: Path) -> int:
    try:
        return os.stat(RunFolder(run_dir).records_path).st_size
    except OSError:
        return 0


def build(run_dir: Path, active: bool = False) -> int:
    """Bring `run_dir`'s cache up to date, part by part, then its overview; returns the bytes cached.

    An active run's short tail is left for later (the file is still growing).
    """
    covered = 0
    while True:
        parts = metric_cache.sync(run_dir, force=not active, max_parts=1, threads=False)
        end = parts[-1].end if parts else 0
        if end <= covered:  # nothing more to add (or the folder cannot hold a cache)
            break
        covered = end
    if covered and metric_overview.covered(run_dir) < covered:
        MetricTable().update(run_dir).save_overview(run_dir)  # starts from the old overview: reads only the new parts
    return covered


class Builder:
    """A queue of run folders and the one daemon thread that caches them, oldest request first."""

    def __init__(self) -> None:
        self._pending: dict[Path, bool] = {}  # folder -> active?, in request order
        self._visited: dict[Path, float] = {}  # active folder -> monotonic time of its last request
        self._cond = threading.Condition()
        self._busy = False
        self.built: dict[Path, int] = {}  # folder -> bytes covered by its last build
        threading.Thread(target=self._loop, name="metrics-cache-builder", daemon=True).start()

    def submit(self, run_dir: Path, active: bool = False) -> None:
        """Cache `run_dir` when the thread gets to it (a folder already waiting keeps its place)."""
        with self._cond:
            self._pending[Path(run_dir)] = active
            self._cond.notify()

    def notice(self, root: Path, previous: Iterable[tuple[str, bool]], current: Iterable[tuple[str, bool]]) -> None:
        """Queue the runs of `current` (a run_watch signature) that are new or changed state since `previous`,
        and active runs not visited for ACTIVE_EVERY_S."""
        before = dict(previous)
        now = time.monotonic()
        for name, active in current:
            d = root / name
            due = active and now - self._visited.get(d, -ACTIVE_EVERY_S) >= ACTIVE_EVERY_S
            if before.get(name) != active or due:
                if active:
                    self._visited[d] = now
                self.submit(d, active)

    def idle(self) -> bool:
        """True when nothing is queued or being built."""
        with self._cond:
            return not self._pending and not self._busy

    def wait_idle(self, timeout_s: float) -> bool:
        """Wait up to `timeout_s` for the queue to drain; True if it did."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.idle():
                return True
            time.sleep(0.05)
        return self.idle()

    def _loop(self) -> None:
        _lower_priority()
        while True:
            with self._cond:
                while not self._pending:
                    self._busy = False
                    self._cond.wait()
                run_dir, active = next(iter(self._pending.items()))
                del self._pending[run_dir]
                self._busy = True
            if _size(run_dir) < MIN_BYTES:
                continue
            try:
                self.built[run_dir] = build(run_dir, active)
            except Exception:  # noqa: BLE001 - a damaged or vanished run must not stop the builder
                continue


_SHARED: list[Builder] = []  # at most one: this process's builder
_LOCK = threading.Lock()


def builder() -> Builder:
    """This process's builder (its thread started on first use)."""
    with _LOCK:
        _SHARED[:] = _SHARED or [Builder()]
    return _SHARED[0]
