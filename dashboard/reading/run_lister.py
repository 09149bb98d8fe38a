"""A big runs root's list of runs kept by a background thread, so a page run does not list 10,000 folders itself.

Listing every run (dashboard/reading/run_list.py) costs three stats a folder once each run is known, and a
read of every folder the first time: 10,000 runs take a second or more a page run, and half a minute
the first time. So one thread a root lists them in the background (started by the first page of the
server), again and again while a list takes longer than BIG_S, waiting three times its own time between
lists. A page uses the last list while the run watcher's signature (runstore/run_watch.py: every folder
and whether it is active) is the one seen when that list began: no run appeared, ended or went since.
A small root's list is quicker than asking the thread: the thread ends and the pages list it themselves.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

from runstore import run_store, run_watch

BIG_S = 0.2  # a list taking longer than this is kept in the background
GAP_S = 1.0  # between lists, at least; or COST_FACTOR times a list's own time
COST_FACTOR = 3


class Lister:
    """The last list of one root (`runs`, with the watcher signature `seen` when it began and its time `took`)."""

    def __init__(self, root: Path, scan: Callable[[Path], list[run_store.RunInfo]]) -> None:
        self.root, self.scan = root, scan
        self.runs: list[run_store.RunInfo] | None = None
        self.seen: object = None
        self.took = 0.0
        self.thread = threading.Thread(target=self._loop, name=f"run-lister-{root.name}", daemon=True)
        self.thread.start()

    def current(self) -> list[run_store.RunInfo] | None:
        """The last list while no run appeared, ended or went since it began; None when a page must list itself."""
        runs = self.runs
        if runs is None or self.took <= BIG_S or self.seen != run_watch.watcher(self.root).current:
            return None
        return runs

    def _loop(self) -> None:
        watcher = run_watch.watcher(self.root)
        while not watcher.stopped.is_set():
            seen, t0 = watcher.current, time.monotonic()
            try:
                runs = self.scan(self.root)
            except Exception:  # noqa: BLE001 - a page then lists the root itself and says what is wrong
                runs = None
            took = time.monotonic() - t0
            self.runs, self.seen, self.took = runs, seen, took
            if took <= BIG_S or runs is None:
                break
            watcher.stopped.wait(max(GAP_S, COST_FACTOR * took))
        with _LOCK:
            if _LISTERS.get(self.root) is self:
                _LISTERS.pop(self.root)


_LISTERS: dict[Path, Lister] = {}
_STARTED: set[Path] = set()  # roots whose first page started a lister (a small root's ends after one list)
_LOCK = threading.Lock()


def start(root: Path, scan: Callable[[Path], list[run_store.RunInfo]], first: bool = False) -> None:
    """Start the root's lister unless one runs; `first`: only if this process never started one for the root
    (the first page of a server: its list is ready when a page asks for it)."""
    with _LOCK:
        if root in _LISTERS or (first and root in _STARTED):
            return
        _STARTED.add(root)
        _LISTERS[root] = Lister(root, scan)


def current(root: Path) -> list[run_store.RunInfo] | None:
    """The root's last list in the background while still current (`Lister.current`), else None."""
    with _LOCK:
        found = _LISTERS.get(root)
    return found.current() if found is not None else None
