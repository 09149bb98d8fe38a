"""A TensorBoard logdir's mirrors kept current in the background, so its new and finished runs reach every page.

The mirrors (runstore/tb_logdir.py) are brought up to date by a sync: a walk of the logdir and a read of
every grown event file. A page syncs when it reruns, but an idle page reruns only when the run
watcher's signature changes (runstore/run_watch.py), which a logdir's runs did not change: a new writer
showed only once the user moved to another page, and a finished writer's run read "running" until then.

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
No Streamlit here.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from runstore import tb_logdir
from runstore.run_folder import RunFolder

POLL_S = 0.25  # between stamps (run_watch's poll)
SYNC_GAP_S = 1.0  # a logdir whose runs write all the time is synced at most this often
COST_FACTOR = 10  # ... or this many times the last sync's time: a sync takes at most a tenth of a core

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

    def __init__(self, logdir: Path, runs_root: Path, stopped: threading.Event) -> None:
        self.logdir, self.runs_root, self.stopped = Path(logdir), Path(runs_root), stopped
        self.seen: Stamp = {}
        self.synced = -1e18  # wall time of the last sync's start
        self.took = 0.0  # the last sync's own time
        self.running = False  # a mirror read "running" after the last sync

    def start(self) -> LogdirWatch:
        """Start the thread; returns self."""
        threading.Thread(target=self._loop, name=f"logdir-watch-{self.runs_root.name}", daemon=True).start()
        return self

    def due(self, now: float, current: Stamp) -> bool:
        """Whether a sync now could change a run's listing or state (see the module doc)."""
        if current.keys() != self.seen.keys():
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

    def check(self, now: float | None = None) -> bool:
        """Stamp the logdir and sync if due; True if it synced."""
        now = time.time() if now is None else now
        current = stamp(self.logdir)
        if not self.due(now, current):
            return False
        self.synced, self.seen = now, current
        t0 = time.monotonic()
        mirrors = tb_logdir.sync_now(self.logdir, self.runs_root, now)
        self.took = time.monotonic() - t0
        self.running = any(tb_logdir.status(m).get("state") == "running" for m in mirrors)
        return True

    def _loop(self) -> None:
        while not self.stopped.wait(POLL_S):
            try:
                self.check()
            except Exception:  # noqa: BLE001 - an unreadable logdir must not stop the watch; pages say why
                self.took = SYNC_GAP_S
