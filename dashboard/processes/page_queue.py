"""The page's side of the run queue (training/queue): every Start waits there for a free slot.

A run started from the page is submitted to the queue of its runs root and dispatched at once: it
starts (on the warm worker when one is ready) while fewer than the queue's limit train, else it
waits, queued, with its position. A dispatcher thread of this server then starts queued jobs, the
page's and a sweep's alike, as slots free up, and ends when nothing is queued. launch.json
records the job (`queue_job`), so every page and tab can show the run as queued, then starting,
and Stop cancels it while it waits. A queue that cannot be used (a damaged, read-only, locked or
linked queue.db, a refused queue key) never makes Start freeze or start the run outside the queue:
the page waits PAGE_WAIT_S at most, and the run reads "failed" with the one line saying why (or,
once submitted, "queued" while the dispatcher waits for the lock). No Streamlit here.
"""

from __future__ import annotations

import logging
import sqlite3
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from runstore import launch_files, run_store
from runstore.run_folder import RunFolder
from settings.queue.store import Queue

DISPATCH_S = 1.0  # how often the dispatcher looks for a free slot while jobs wait
PAGE_WAIT_S = 3.0  # a page's call waits this long for another process's write to queue.db, then says so
TRAINING = [sys.executable, "-m", "training"]
StartNow = Callable[[list[str], Path, Path | None], tuple[int, str]]  # (command, log, metrics) -> (pid, via)
log = logging.getLogger(__name__)

_dispatchers: dict[str, threading.Thread] = {}
_lock = threading.Lock()


def _metrics_of(log_path: Path) -> Path | None:
    """The run's metrics.jsonl next to its process.log (None for a population's launch folder or a sweep's log)."""
    info = launch_files.launch_info(log_path.parent)
    return RunFolder(log_path.parent).records_path if info and not info.get("population") else None


def _starter(
    start_now: StartNow, started: dict[int, str], metrics: dict[int, Path | None]
) -> Callable[[int, list[str], Path], int]:
    """The queue's `start(job, argv, log)`: `start_now` of `python -m training ARGV`, remembering how it started."""

    def start(job: int, argv: list[str], log_path: Path) -> int:
        log_path.parent.mkdir(parents=True, exist_ok=True)  # a sweep's log goes to <runs root>/.queue/
        pid, via = start_now([*TRAINING, *argv], log_path, metrics[job] if job in metrics else _metrics_of(log_path))
        started[job] = via
        return pid

    return start


def start(cmd: list[str], log_path: Path, metrics: Path | None, start_now: StartNow) -> dict[str, Any]:
    """Submit `cmd` (`python -m training ...`) to the queue and dispatch; launch.json's process fields.

    {"pid", "via", "queue_job"} when it started now, {"queue_job", "via": "queue"} when it waits (also
    when queue.db is busy after the job was submitted: the dispatcher thread starts it), and
    {"queue_error": why} when the queue cannot take it (nothing started; `queue_status` says why).
    """
    root = run_store.runs_root()
    try:
        queue = Queue(root, wait_s=PAGE_WAIT_S)
        job = queue.submit(cmd[len(TRAINING) :], label=f"page: {' '.join(cmd[len(TRAINING) : len(TRAINING) + 1])}",
                           log=log_path)  # fmt: skip
    except (OSError, sqlite3.Error) as exc:  # QueueError, KeyRefused: one line naming the file and the fix
        log.warning("the run queue in %s cannot take a run: %s", root, exc)
        return {"queue_error": f"Not started: the run queue cannot be used: {exc}", "via": "queue"}
    started: dict[int, str] = {}
    try:
        queue.dispatch(_starter(start_now, started, {job: metrics}))
        row = queue.job(job) or {}
    except (OSError, sqlite3.Error) as exc:  # e.g. locked meanwhile: it waits, queued, for the dispatcher
        log.warning("run queue dispatch in %s must wait: %s", root, exc)
        row = {"state": "queued"}
    if row.get("state") == "running":
        return {"pid": row["pid"], "via": started.get(job, "cold"), "queue_job": job}
    ensure_dispatcher(root, start_now)
    return {"queue_job": job, "via": "queue"}


def _dispatch_once(root: Path, start_now: StartNow, wait_s: float = PAGE_WAIT_S) -> bool:
    """Start queued jobs of `root` while slots are free (by `start_now`); whether any still wait."""
    queue = Queue(root, wait_s=wait_s)
    queue.dispatch(_starter(start_now, {}, {}))
    return any(j["state"] == "queued" for j in queue.jobs())


def dispatch(root: Path, start_now: StartNow) -> None:
    """Start queued jobs of `root` while slots are free (by `start_now`); the dispatcher thread takes the rest."""
    if _dispatch_once(root, start_now):
        ensure_dispatcher(root, start_now)


def ensure_dispatcher(root: Path, start_now: StartNow) -> None:
    """Have this server's dispatcher thread for `root` running (it ends when nothing is queued)."""
    with _lock:
        thread = _dispatchers.get(str(root))
        if thread is not None and thread.is_alive():
            return
        thread = threading.Thread(target=_dispatch_loop, args=(root, start_now), daemon=True, name="run-queue")
        _dispatchers[str(root)] = thread
        thread.start()


def _dispatch_loop(root: Path, start_now: StartNow) -> None:
    while True:
        time.sleep(DISPATCH_S)
        try:
            waiting = _dispatch_once(root, start_now, wait_s=60.0)  # its own thread: it may wait for a lock
        except (OSError, sqlite3.Error) as exc:  # e.g. the runs root was removed: try again later
            log.warning("run queue dispatch in %s failed: %s", root, exc)
            waiting = True
        with _lock:  # decided under the lock: a job submitted meanwhile finds this thread gone and starts one
            if not waiting:
                _dispatchers.pop(str(root), None)
                return


def queue_status(info: dict[str, Any]) -> dict[str, Any] | None:
    """A queued page start's status from its job: queued (with its position) or cancelled; None once it started.

    Also puts the job's pid into `info` once the queue started it, so the launch is followed like any other.
    """
    if info.get("queue_error") and "pid" not in info:
        return {"state": "failed", "message": info["queue_error"], "started": info.get("launched")}
    job = info.get("queue_job")
    if job is None or "pid" in info:
        return None
    try:
        row = Queue(run_store.runs_root(), wait_s=PAGE_WAIT_S).job(job)
    except (OSError, sqlite3.Error) as exc:  # e.g. locked by another process: it still waits there
        return {"state": "queued", "position": "?", "message": str(exc), "started": info.get("launched")}
    if row is None:
        return None
    if row["state"] == "queued":
        return {"state": "queued", "position": row["position"], "started": info.get("launched")}
    if row["state"] == "refused":
        return {
            "state": "failed",
            "message": f"The run queue refused {row['reason']}.",
            "started": info.get("launched"),
        }
    if row["state"] == "cancelled":
        return {
            "state": "stopped",
            "message": "Cancelled while it waited in the run queue.",
            "started": info.get("launched"),
        }
    if row.get("pid"):
        info["pid"] = row["pid"]
    return None


def cancel(info: dict[str, Any]) -> bool:
    """Cancel the queued job of a page start; False if it has started (or is no queued start)."""
    job = info.get("queue_job")
    if job is None:
        return False
    try:
        return Queue(run_store.runs_root(), wait_s=PAGE_WAIT_S).cancel(job)
    except (OSError, sqlite3.Error):
        return False
