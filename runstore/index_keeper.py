"""Keeping a runs root's index current from a background thread of the process that serves the pages.

One thread a root and process: it updates the index (`runstore.run_index.update`) again and again, waiting
between updates at least `every_s` and twice the last update's duration, so a root of many runs costs the
server at most a third of a core, and a run's write reaches the index within about three updates' time. A
page asks for an update when it opens (`fresh`) and waits for it at most a second, never longer. The thread
ends when the root is gone. No JAX and no Streamlit here.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from runstore import run_index, run_store

EVERY_S = 1.0
FRESH_WAIT_S = (0.5, 1.0)  # `fresh` waits at least the first, at most the second, twice the last update's time
log = logging.getLogger("jaxdash")


@dataclass
class _Keeper:
    """One root's updater: its events and how many updates have begun and ended."""

    first: threading.Event = field(default_factory=threading.Event)  # the first update ended
    stop: threading.Event = field(default_factory=threading.Event)
    wake: threading.Event = field(default_factory=threading.Event)  # an update is asked for now
    done: threading.Condition = field(default_factory=threading.Condition)
    begun: int = 0
    ended: int = 0
    last_s: float = 0.0  # the last update's duration
    last_cpu_s: float = 0.0  # ... and its CPU time (which the load of other processes does not stretch)
    ok: bool = False  # the last update was this keeper's (not skipped while another writer held the index)


_KEEPERS: dict[Path, _Keeper] = {}
_LOCK = threading.Lock()


def _update(root: Path, k: _Keeper, failed: str) -> str:
    """One update; the failure's text ("" when it went well), logged once a new failure."""
    with k.done:
        k.begun += 1
    started, cpu = time.perf_counter(), time.thread_time()
    ok = False
    try:
        ok = run_index.update(root) is not None
        failed = ""
    except Exception as exc:  # noqa: BLE001 - the pages must go on; one line a new failure, not one a second
        if str(exc) != failed:
            log.warning("run index of %s: not updated (%s: %s)", root, type(exc).__name__, exc)
        failed = str(exc)
    with k.done:
        k.ended += 1
        k.last_s, k.last_cpu_s, k.ok = time.perf_counter() - started, time.thread_time() - cpu, ok
        k.done.notify_all()
    k.first.set()
    return failed


def _loop(root: Path, every_s: float, k: _Keeper) -> None:
    failed = ""
    while not k.stop.is_set():
        failed = _update(root, k, failed)
        if not root.is_dir():
            break
        # Paced by its own CPU time: on a busy machine an update's wall time grows with other work, and pacing by
        # it would leave a run's write out of queries for many seconds just when the machine is busiest.
        k.wake.wait(max(every_s, 2 * k.last_cpu_s))  # a page's `fresh` wakes it sooner
        k.wake.clear()
    with _LOCK:
        if _KEEPERS.get(root) is k:
            _KEEPERS.pop(root, None)


def _keeper(root: Path, every_s: float) -> _Keeper:
    """The root's keeper in this process, started when there is none."""
    with _LOCK:
        if root not in _KEEPERS:
            k = _KEEPERS[root] = _Keeper()
            threading.Thread(target=_loop, args=(root, every_s, k), name="run-index", daemon=True).start()
        return _KEEPERS[root]


def keep_current(root: str | os.PathLike | None = None, wait_s: float = 1.0, every_s: float = EVERY_S) -> bool:
    """Start the root's updater thread in this process (once), and wait up to `wait_s` for its first update;
    True when that update has ended (the index holds every run), False while it is still building."""
    return _keeper(run_store.runs_root(root), every_s).first.wait(wait_s)


def fresh(root: str | os.PathLike | None = None, every_s: float = EVERY_S) -> bool:
    """Start the root's updater (once) and ask it for an update now; wait for that update to end, at most twice
    the last update's time within FRESH_WAIT_S. True when the index is as fresh as the folders were at the call,
    False when the caller goes on with the index as it is (a first build of many runs, a slow disk, another
    process holding the index: its writer keeps it)."""
    k = _keeper(run_store.runs_root(root), every_s)
    with k.done:
        wanted = k.begun + 1  # an update already under way may have passed a folder written just now
        k.wake.set()
        wait_s = min(FRESH_WAIT_S[1], max(FRESH_WAIT_S[0], 2 * k.last_s))
        return k.done.wait_for(lambda: k.ended >= wanted, wait_s) and k.ok


def update_cpu_seconds(root: str | os.PathLike | None = None) -> float:
    """The CPU time of the root's last update in this process (0.0 before its first one)."""
    with _LOCK:
        k = _KEEPERS.get(run_store.runs_root(root))
    return k.last_cpu_s if k is not None else 0.0


def stop_all() -> None:
    """Ask every updater thread of this process to end (a test's cleanup; a server's keepers end with it)."""
    with _LOCK:
        for k in _KEEPERS.values():
            k.stop.set()
            k.wake.set()
        _KEEPERS.clear()
