"""Which runs exist and which are active, kept current by one background thread per server.

Every page compares this signature every WATCH_S (dashboard/reading/runs_watch.watch_runs) and reruns itself when it
changed, so lists of runs follow runs started, ended or deleted anywhere (a CLI run, another tab).
The thread, not the page, reads the run directories: a page's check costs a dict lookup, and never
delays the Live page's chart refreshes on a busy machine. It also hands every run it sees first, and
every run that changed state, to runstore/metrics/cache_builder.py, which caches big runs' metrics ahead of
a page opening them. Listeners (`on_change`: the push streams' watcher) are told at once when the signature
changed, and a logdir sync pokes the thread (`poke`) so a new mirror is seen without waiting for a poll.
No Streamlit here.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from runstore import run_store
from runstore.metrics import cache_builder
from runstore.run_folder import LAUNCH, STATUS, RunFolder

if TYPE_CHECKING:
    from runstore.logdir_watch import LogdirWatch

POLL_S = 0.25  # between polls; at least COST_FACTOR x a poll's own time (1,000 runs: ~0.04 s a poll)
# So the watcher never takes more than a tenth of a core. A poll's own time is its thread's CPU time: on a
# busy machine its wall time grows with every other thread's and process's work (waiting for the GIL and a
# core), and pacing by that would leave a new run unseen for seconds exactly when pages need it soonest.
COST_FACTOR = 10


def _state(d: Path) -> bool:
    """Whether the run in `d` is active: running, or launched (or resumed) from the page and still alive."""
    status = RunFolder(d).status()
    launch = run_store.read_json(RunFolder(d).launch_path, {})
    launch = launch if isinstance(launch, dict) else {}
    resume = launch.get("resume") if isinstance(launch.get("resume"), dict) else {}
    if status.get("state") == "running":
        return True
    if status.get("state"):  # ended; active again while a resume's process is starting
        return (resume.get("launched") or 0) > (status.get("updated") or 0) and run_store.pid_alive(resume.get("pid"))
    return not launch.get("group") and run_store.pid_alive(launch.get("pid"))


def _mtimes(d: Path) -> tuple[int, int]:
    out = []
    for name in (STATUS, LAUNCH):
        try:
            out.append(os.stat(d / name).st_mtime_ns)
        except OSError:
            out.append(0)
    return out[0], out[1]


# folder -> ((status.json, launch.json) mtimes, active?): an ended run whose files did not change stays
# ended, so a poll of 1,000 runs costs 2,000 stats, not 2,000 JSON reads (only active runs are re-read).
_KNOWN: dict[Path, tuple[tuple[int, int], bool]] = {}


def _state_cached(d: Path) -> bool:
    key = _mtimes(d)
    known = _KNOWN.get(d)
    if known is not None and known[0] == key and not known[1]:
        return False
    active = _state(d)
    _KNOWN[d] = (key, active)
    return active


def signature(root: Path) -> tuple[tuple[str, bool], ...]:
    """(folder name, active?) of every run folder under `root`, sorted by name."""
    names = sorted(d.name for d in run_store.run_folders(root))
    return tuple((n, _state_cached(root / n)) for n in names)


def _mirror_active(d: Path) -> bool:
    """Whether a logdir mirror reads "running": its status.json as its sync wrote it (it has no process of ours,
    so `_state` would call it crashed), re-read only when that file changed."""
    key = _mtimes(d)
    known = _KNOWN.get(d)
    if known is None or known[0] != key:
        status = RunFolder(d).raw_status({})
        known = _KNOWN[d] = (key, isinstance(status, dict) and status.get("state") == "running")
    return known[1]


def _own(listing: tuple[tuple[str, bool], ...]) -> tuple[tuple[str, bool], ...]:
    """The run folders of a signature, less the mirrors (their metrics are rewritten by each sync, not cached ahead)."""
    return tuple(e for e in listing if "/" not in e[0])


class Watcher:
    """Recomputes `signature(root)` every POLL_S (or longer, see COST_FACTOR) in a daemon thread; `current` is the latest."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.builder = cache_builder.builder()
        self.stopped = threading.Event()
        self._wake = threading.Event()  # poke(): look now, not at the next poll
        self._listeners: list[Callable[[], None]] = []
        self.mirrors: Path | None = None  # a TensorBoard logdir's mirror run folders, if this server reads one
        self.logdir_watch: LogdirWatch | None = None  # its syncs, the only ones: a page asks it (run_list)
        if os.environ.get("JAXDASH_LOGDIR"):  # its new and finished runs change the signature with no page asking
            from runstore import logdir_watch, tb_logdir  # TensorBoard's reader, only where a logdir is read

            self.mirrors = tb_logdir.mirror_root(root)
            watch = logdir_watch.LogdirWatch(Path(os.environ["JAXDASH_LOGDIR"]), root, self.stopped, self.poke)
            self.logdir_watch = watch.start()
        self.current = self._signature()
        self.builder.notice(root, (), _own(self.current))
        threading.Thread(target=self._loop, name=f"run-watch-{root.name}", daemon=True).start()

    def _signature(self) -> tuple[tuple[str, bool], ...]:
        """`signature` of the runs root, then ("<mirrors>/<id>", active?) of each mirror of the logdir."""
        own = signature(self.root)
        if self.mirrors is None:
            return own
        names = sorted(d.name for d in run_store.run_folders(self.mirrors))
        return own + tuple((f"{self.mirrors.name}/{n}", _mirror_active(self.mirrors / n)) for n in names)

    def poke(self) -> None:
        """Look at the runs now (a logdir sync changed the mirrors), not at the next poll."""
        self._wake.set()

    def on_change(self, listener: Callable[[], None]) -> None:
        """Call `listener` (from this watcher's thread) each time `current` changed: the push streams send it at once."""
        self._listeners.append(listener)

    def stop(self) -> None:
        """End the thread (and the logdir watch's)."""
        self.stopped.set()
        self._wake.set()

    def _loop(self) -> None:
        took = 0.0
        while not self.stopped.is_set():
            self._wake.wait(max(POLL_S, COST_FACTOR * took))
            self._wake.clear()
            if self.stopped.is_set():
                return
            t0 = time.thread_time()
            try:
                previous, self.current = self.current, self._signature()
                self.builder.notice(self.root, _own(previous), _own(self.current))
            except Exception:  # noqa: BLE001 - a damaged folder must not stop the watcher
                continue
            finally:
                took = time.thread_time() - t0
            if self.current != previous:
                for listener in list(self._listeners):
                    listener()


_WATCHERS: dict[Path, Watcher] = {}
_LOCK = threading.Lock()


def watcher(root: Path) -> Watcher:
    """The watcher of `root` (started on first use)."""
    with _LOCK:
        if root not in _WATCHERS:
            _WATCHERS[root] = Watcher(root)
        return _WATCHERS[root]


def stop_all() -> None:
    """Stop every watcher of this process (a later `watcher(root)` starts a new one).

    A server watches one runs root for its whole life; a process that opens many roots one after the
    other (the test suite's AppTest pages: one per test) stops the ones it is done with, instead of
    polling every one of them four times a second until it exits.
    """
    with _LOCK:
        for watched in _WATCHERS.values():
            watched.stop()
        _WATCHERS.clear()
        _KNOWN.clear()
