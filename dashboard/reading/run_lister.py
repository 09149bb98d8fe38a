"""A big runs root's list of runs kept by a background thread, so a page run does not list 10,000 folders itself.

Listing every run (dashboard/reading/run_list.py) costs three stats a folder once each run is known, and a
read of every folder the first time: 10,000 runs take a second or more a page run, and half a minute
the first time. So one thread a root lists them in the background (started by the first page of the
server) while a list takes longer than BIG_S: again COST_FACTOR times a list's own CPU time later (for an
ended run's renamed or noted files), sooner (CHANGED_FACTOR) once a run appeared, ended or went.
A page takes the last list as it is while the run watcher's signature (runstore/run_watch.py: every folder
and whether it is active) is the one seen when that list began; else the last list with the folders whose
entry changed read again (at most PATCH_MAX, each a run of its own: a page launch's folder lists it all).
A small root's list is quicker than asking the thread: the thread ends and the pages list it themselves.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from dashboard.reading import provider

BIG_S = 0.2  # a list taking more CPU time than this (not wall time: the load of other processes) is kept here
GAP_S = 1.0  # between lists, at least
COST_FACTOR = 10  # lists at most a tenth of a core ...
CHANGED_FACTOR = 2  # ... or half a core while the watcher saw a run appear, end or go
PATCH_MAX = 200  # more changed folders than this: the page lists the root itself

Runs = list[provider.RunInfo]


@dataclass
class Reads:
    """How to list a root (`scan`), read one folder's run (`one`, None when it holds no run of its own) and
    order a list (`order`)."""

    scan: Callable[[Path], Runs]
    one: Callable[[Path], provider.RunInfo | None]
    order: Callable[[Runs], Runs]


class Lister:
    """The last list of one root (`runs`, with the watcher signature `seen` when it began and its CPU time `took`)."""

    def __init__(self, root: Path, reads: Reads) -> None:
        self.root, self.reads = root, reads
        self.runs: Runs | None = None
        self.seen: tuple[tuple[str, bool], ...] = ()
        self.took = 0.0
        self.thread = threading.Thread(target=self._loop, name=f"run-lister-{root.name}", daemon=True)
        self.thread.start()

    def current(self) -> Runs | None:
        """The last list, with the folders whose watcher entry changed since it began read again; None when a
        page must list the root itself (no list yet, a small root, too many changes, a page launch's folder)."""
        runs, seen = self.runs, self.seen
        if runs is None or self.took <= BIG_S:
            return None
        now = provider.runs_signature(self.root)
        if now == seen:
            return runs
        old, new = dict(seen), dict(now)
        changed = {n for n in old.keys() | new.keys() if old.get(n) != new.get(n)}
        if len(changed) > PATCH_MAX:
            return None
        paths = {self.root / n for n in changed}
        out = [r for r in runs if r.path not in paths]
        for name in changed & new.keys():
            run = self.reads.one(self.root / name)
            if run is None:
                return None
            out.append(run)
        return self.reads.order(out)

    def _loop(self) -> None:
        watcher = provider.run_watcher(self.root)
        while not watcher.stopped.is_set():
            seen, t0, cpu0 = watcher.current, time.monotonic(), time.thread_time()
            try:
                runs = self.reads.scan(self.root)
            except Exception:  # noqa: BLE001 - a page then lists the root itself and says what is wrong
                runs = None
            cpu = time.thread_time() - cpu0
            self.runs, self.seen, self.took = runs, seen, cpu
            if cpu <= BIG_S or runs is None:
                break
            again, soon = t0 + max(GAP_S, COST_FACTOR * cpu), t0 + max(GAP_S, CHANGED_FACTOR * cpu)
            while not watcher.stopped.wait(provider.WATCH_POLL_S):
                at = time.monotonic()
                if at >= again or (at >= soon and watcher.current != seen):
                    break
        with _LOCK:
            if _LISTERS.get(self.root) is self:
                _LISTERS.pop(self.root)


_LISTERS: dict[Path, Lister] = {}
_STARTED: set[Path] = set()  # roots whose first page started a lister (a small root's ends after one list)
_LOCK = threading.Lock()


def start(root: Path, reads: Reads, first: bool = False) -> None:
    """Start the root's lister unless one runs; `first`: only if this process never started one for the root
    (the first page of a server: its list is ready when a page asks for it)."""
    with _LOCK:
        if root in _LISTERS or (first and root in _STARTED):
            return
        _STARTED.add(root)
        _LISTERS[root] = Lister(root, reads)


def current(root: Path) -> Runs | None:
    """The root's last list in the background while still current (`Lister.current`), else None."""
    with _LOCK:
        found = _LISTERS.get(root)
    return found.current() if found is not None else None
