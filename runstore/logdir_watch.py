"""A TensorBoard logdir's mirrors kept current in the background, so its new and finished runs reach every page.

The mirrors (runstore/tb_logdir.py) are brought up to date by a sync: a walk of the logdir and a read of
every grown event file, which for a logdir of 1,000 runs read the first time takes many seconds: so only
this thread syncs, never a page run, and an idle page learns of a new or finished run from the run
watcher's signature (runstore/run_watch.py), which the mirrors' states join.

One thread per runs root (started by run_watch's Watcher) looks at the logdir every POLL_S: a stamp of
its folders' modification times and its event files' sizes and times (os.scandir and a stat per event
file, never a read; folders inside our own run folders left out, as tb_logdir.find_runs leaves them).
It syncs only when the sync could change what a page lists:
  * a new folder or event file (a new run, or a run's new file): at once;
  * the moment a run may change state by the idle rule: tb_logdir.IDLE_S and RECENT_S after an event
    file's last write: at once, so a closed writer's run reads finished IDLE_S after its last write;
  * an event file grew, or a run reads running (its writer may close its files, its reader may be
    catching up): at most every SYNC_GAP_S, or COST_FACTOR times the last sync's own time if longer.
A quiet logdir (every run finished, nothing written) costs the stamp alone. The mirrors' states join the
run watcher's signature, which the page polls: a sync that adds a run or changes its state reruns it.

Pages never sync: a page run asks the watch for a check now (`request`) and waits for it a bounded time
(until FIRST_WAIT_S after the watch began while its first sync is under way, REQUEST_WAIT_S after it; not at
all for a big logdir, whose stamp alone costs more than QUICK_STAMP_S), then lists the mirrors as they are;
an asked check syncs whenever the stamp changed or a run reads running, at most every tb_logdir.SYNC_EVERY_S.
While the first sync of a big logdir is under way the page shows the runs mirrored so far and says so
(`reading`). Stamps are paced as syncs are: at least COST_FACTOR times a stamp's own time apart.
No Streamlit here.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

from runstore import tb_logdir
from runstore.run_folder import RunFolder

POLL_S = 0.25  # between stamps (run_watch's poll)
SYNC_GAP_S = 1.0  # a logdir whose runs write all the time is synced at most this often
COST_FACTOR = 10  # ... or this many times the last sync's time: a sync takes at most a tenth of a core
FIRST_WAIT_S = 3.0  # pages wait for the first sync until this long after the watch began (a small logdir's is quicker)
REQUEST_WAIT_S = 1.0  # ... and this long for a requested check after it (a quiet logdir's costs its stamp)
QUICK_STAMP_S = 0.02  # a logdir whose stamp costs more CPU time (1,000 runs) is not waited for: its mirrors are
# at most a poll behind, and a page would wait for the stamp under the load of every other thread

Stamp = dict[str, tuple[int, int]]  # path under the logdir -> (size, mtime in ns); a folder's size is -1


def stamp(logdir: Path) -> Stamp:
    """The logdir's folders (their modification times) and event files (sizes and times), by path.

    Hidden folders and our own run folders (config.json and status.json) are left out, links never
    followed: what tb_logdir.find_runs lists changes only when one of these changes.
    """
    out: Stamp = {}
    pending = [Path(logdir)]
    while pending:
        folder = pending.pop()
        try:
            if (run := RunFolder(folder)).config_path.exists() and run.status_path.exists():
                continue
            out[str(folder)] = (-1, os.stat(folder, follow_symlinks=False).st_mtime_ns)
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False) and not entry.name.startswith("."):
                    pending.append(Path(entry.path))
                elif entry.name.startswith(tb_logdir.EVENT_PREFIX):
                    st = entry.stat(follow_symlinks=False)
                    out[entry.path] = (st.st_size, st.st_mtime_ns)
            except OSError:
                continue
    return out


class LogdirWatch:
    """Syncs the mirrors of `logdir` under `runs_root` when due (`due`), in a daemon thread until `stopped` is set."""

    def __init__(
        self, logdir: Path, runs_root: Path, stopped: threading.Event, on_sync: Callable[[], None] | None = None
    ) -> None:
        self.logdir, self.runs_root, self.stopped = Path(logdir), Path(runs_root), stopped
        self.on_sync = on_sync  # told after each sync (the run watcher looks at the mirrors at once)
        self.seen: Stamp = {}
        self.synced = -1e18  # wall time of the last sync's start
        self.took = 0.0  # the last sync's own time
        self.running = False  # a mirror read "running" after the last sync
        self.error = ""  # why the last check failed ("" when it went well): the pages say it
        self.synced_once = threading.Event()  # the first sync (or failed check) ended
        self._wake = threading.Event()
        self._done = threading.Condition()
        self._asked = self._checked = 0  # requests made, and the last one a check began after
        self.began = time.monotonic()
        self.stamp_s = 0.0  # the last stamp's own time (thread CPU time)

    def start(self) -> LogdirWatch:
        """Start the thread; returns self."""
        threading.Thread(target=self._loop, name=f"logdir-watch-{self.runs_root.name}", daemon=True).start()
        return self

    @property
    def reading(self) -> bool:
        """Whether the first sync of the logdir is still under way (the mirrors hold part of its runs)."""
        return not self.synced_once.is_set()

    def request(self) -> bool:
        """Ask for a check now and wait for it a bounded time (see the module doc); True when it ended in time.
        The caller then reads the mirrors as they are either way."""
        if not self.synced_once.is_set():
            wait_s = max(0.0, self.began + FIRST_WAIT_S - time.monotonic())
        else:
            wait_s = REQUEST_WAIT_S if self.stamp_s <= QUICK_STAMP_S else 0.0
        with self._done:
            self._asked += 1
            wanted = self._asked
            self._wake.set()
            return self._done.wait_for(lambda: self._checked >= wanted, wait_s)

    def due(self, now: float, current: Stamp, asked: bool = False) -> bool:
        """Whether a sync now could change a run's listing or state (see the module doc); `asked`: a page waits."""
        if current.keys() != self.seen.keys():
            return True
        if asked and now - self.synced >= tb_logdir.SYNC_EVERY_S and (self.running or current != self.seen):
            return True
        edges = (
            m / 1e9 + wait
            for size, m in current.values()
            if size >= 0
            for wait in (tb_logdir.IDLE_S, tb_logdir.RECENT_S)
        )
        if any(self.synced < edge <= now for edge in edges):
            return True
        paced = now - self.synced >= max(SYNC_GAP_S, COST_FACTOR * self.took)
        return paced and (self.running or current != self.seen)

    def check(self, now: float | None = None, asked: bool = False) -> bool:
        """Stamp the logdir and sync if due (`asked`: a page waits for this check); True if it synced."""
        now = time.time() if now is None else now
        t0 = time.thread_time()
        current = stamp(self.logdir)
        self.stamp_s = time.thread_time() - t0
        if not self.due(now, current, asked):
            return False
        self.synced, self.seen = now, current
        t0 = time.thread_time()  # its own cost: CPU time, which other processes' load does not stretch
        mirrors = tb_logdir.sync(self.logdir, self.runs_root, now)
        self.took = time.thread_time() - t0
        self.running = any(tb_logdir.status(m).get("state") == "running" for m in mirrors)
        return True

    def _loop(self) -> None:
        while not self.stopped.is_set():
            self._wake.clear()  # before reading the requests: one made after this wakes the wait below
            with self._done:
                asked = self._asked
            try:
                if self.check(asked=asked > self._checked) and self.on_sync is not None:
                    self.on_sync()
                self.error = ""
            except Exception as exc:  # noqa: BLE001 - an unreadable logdir must not stop the watch; pages say why
                self.took, self.error = SYNC_GAP_S, f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            self.synced_once.set()
            with self._done:
                self._checked = asked
                self._done.notify_all()
            self._wake.wait(max(POLL_S, COST_FACTOR * self.stamp_s))  # a page's request wakes it sooner
