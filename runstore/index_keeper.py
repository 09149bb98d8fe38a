"""Keeping a runs root's index current from a background thread of the process that serves the pages.

One thread a root and process: it updates the index (`runstore.run_index.update`) again and again, waiting
between updates at least `every_s` and twice the last update's duration, so a root of many runs costs the
server at most a third of a core, and a run's write reaches the index within about three updates' time. A
page never waits on it beyond `keep_current`'s short wait for the first update. The thread ends when the root is gone. No JAX and no Streamlit here.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from pathlib import Path

from runstore import run_index, run_store

EVERY_S = 1.0
log = logging.getLogger("jaxdash")
_KEEPERS: dict[Path, tuple[threading.Event, threading.Event]] = {}  # root -> (first update ended, stop asked)
_LOCK = threading.Lock()


def _loop(root: Path, every_s: float, first: threading.Event, stop: threading.Event) -> None:
    failed = ""
    while not stop.is_set():
        started = time.perf_counter()
        try:
            run_index.update(root)
            failed = ""
        except Exception as exc:  # noqa: BLE001 - the pages must go on; one line a new failure, not one a second
            if str(exc) != failed:
                log.warning("run index of %s: not updated (%s: %s)", root, type(exc).__name__, exc)
            failed = str(exc)
        first.set()
        if not root.is_dir():
            break
        stop.wait(max(every_s, 2 * (time.perf_counter() - started)))
    with _LOCK:
        if _KEEPERS.get(root, (None, None))[1] is stop:
            _KEEPERS.pop(root, None)


def keep_current(root: str | os.PathLike | None = None, wait_s: float = 1.0, every_s: float = EVERY_S) -> bool:
    """Start the root's updater thread in this process (once), and wait up to `wait_s` for its first update;
    True when that update has ended (the index holds every run), False while it is still building."""
    root = run_store.runs_root(root)
    with _LOCK:
        if root not in _KEEPERS:
            first, stop = _KEEPERS[root] = threading.Event(), threading.Event()
            threading.Thread(target=_loop, args=(root, every_s, first, stop), name="run-index", daemon=True).start()
        first = _KEEPERS[root][0]
    return first.wait(wait_s)


def stop_all() -> None:
    """Ask every updater thread of this process to end (a test's cleanup; a server's keepers end with it)."""
    with _LOCK:
        for _, stop in _KEEPERS.values():
            stop.set()
        _KEEPERS.clear()
