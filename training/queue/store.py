"""The run queue: every start waits here, and at most N training processes run at once.

A SQLite file next to the runs, `<runs root>/queue.db`, holds one row per job (the command's
arguments after `python -m training`). Anyone who submits (the CLI with `--queue`, a sweep, the
page) calls `dispatch`, which in one write transaction marks dead processes ended and starts
queued jobs, oldest first, while fewer than the limit run. Queued jobs have a position and can
be cancelled. The limit defaults to the cores and free memory (`default_limit`) and is settable.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil

from runstore import safe_files

PER_PROCESS_BYTES = 2 << 30  # a training process's share of memory when choosing the default limit
SCHEMA = """
create table if not exists jobs (
  id integer primary key autoincrement, argv text not null, label text not null,
  state text not null default 'queued', pid integer, created real, started real, ended real, rc integer
);
create table if not exists settings (key text primary key, value text);
"""
LOG_COLUMN = "alter table jobs add column log text"  # where the job's output goes (a run folder's process.log)
Start = Callable[[int, list[str], Path], int]  # (job id, argv after `python -m training`, log file) -> pid


def default_limit() -> int:
    """Processes at once: one per core, fewer when free memory cannot hold that many."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return max(1, min(cores, psutil.virtual_memory().available // PER_PROCESS_BYTES))


def _alive(pid: int) -> tuple[bool, int | None]:
    """(still running, exit code if it was our child and has ended)."""
    try:
        done, status = os.waitpid(pid, os.WNOHANG)  # reaps our own children (no zombies)
        if done:
            return False, os.waitstatus_to_exitcode(status)
    except ChildProcessError:
        pass  # started by another process: ask the system
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE, None
    except psutil.NoSuchProcess:
        return False, None


class Queue:
    """The queue of one runs root."""

    def __init__(self, root: Path | str):
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.path = self.root / "queue.db"
        self.logs = self.root / ".queue"
        with self._db() as db:
            db.executescript(SCHEMA)
            if "log" not in {r["name"] for r in db.execute("pragma table_info(jobs)")}:
                with contextlib.suppress(sqlite3.OperationalError):  # another process added it first
                    db.execute(LOG_COLUMN)

    def _db(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=60, isolation_level=None)
        db.row_factory = sqlite3.Row
        return db

    def limit(self) -> int:
        """The most processes at once: the setting, else `default_limit()`."""
        with self._db() as db:
            row = db.execute("select value from settings where key='limit'").fetchone()
        return int(row["value"]) if row else default_limit()

    def set_limit(self, n: int) -> None:
        """Allow `n` (>= 1) processes at once."""
        if n < 1:
            raise ValueError(f"the queue's limit must be >= 1 (got {n})")
        with self._db() as db:
            db.execute("insert or replace into settings values ('limit', ?)", (str(n),))

    def submit(self, argv: list[str], label: str = "", log: Path | None = None) -> int:
        """Queue `python -m training ARGV` (its output to `log`, else `log_path(job)`); returns the job id."""
        with self._db() as db:
            cur = db.execute(
                "insert into jobs (argv, label, created, log) values (?, ?, ?, ?)",
                (json.dumps(argv), label or " ".join(argv[:1]), time.time(), str(log) if log else None),
            )
            return int(cur.lastrowid)

    def cancel(self, job: int) -> bool:
        """Cancel a queued job (True), or False when it already started or ended."""
        with self._db() as db:
            cur = db.execute(
                "update jobs set state='cancelled', ended=? where id=? and state='queued'", (time.time(), job)
            )
            return cur.rowcount == 1

    def jobs(self) -> list[dict[str, Any]]:
        """Every job, oldest first; queued ones carry their `position` (1 = next)."""
        with self._db() as db:
            rows = [dict(r) for r in db.execute("select * from jobs order by id")]
        position = 0
        for r in rows:
            r["argv"] = json.loads(r["argv"])
            if r["state"] == "queued":
                position += 1
                r["position"] = position
        return rows

    def job(self, job: int) -> dict[str, Any] | None:
        """Job `job` as in `jobs()` (with its position while queued), or None for an unknown id."""
        return next((j for j in self.jobs() if j["id"] == job), None)

    def state(self, job: int) -> str:
        """'queued', 'running', 'ended' or 'cancelled' ('' for an unknown id)."""
        with self._db() as db:
            row = db.execute("select state from jobs where id=?", (job,)).fetchone()
        return row["state"] if row else ""

    def dispatch(self, start: Start | None = None) -> list[int]:
        """Mark ended processes, then start queued jobs while fewer than the limit run; the started ids.

        `start(job, argv, log)` starts one job and returns its pid (the page passes one that uses
        its warm worker); by default a fresh `python -m training` process.
        """
        limit = self.limit()
        started = []
        with self._db() as db:
            db.execute("begin immediate")  # one dispatcher at a time, across processes
            try:
                running = 0
                for r in db.execute("select id, pid from jobs where state='running'").fetchall():
                    alive, rc = _alive(r["pid"])
                    if alive:
                        running += 1
                    else:
                        db.execute(
                            "update jobs set state='ended', ended=?, rc=? where id=?", (time.time(), rc, r["id"])
                        )
                queued = db.execute("select id, argv, log from jobs where state='queued' order by id").fetchall()
                for r in queued[: max(0, limit - running)]:
                    log = self._output(r["id"], r["log"])
                    pid = (start or self._start)(r["id"], json.loads(r["argv"]), log)
                    db.execute(
                        "update jobs set state='running', pid=?, started=? where id=?", (pid, time.time(), r["id"])
                    )
                    started.append(r["id"])
                db.execute("commit")
            except BaseException:
                db.execute("rollback")
                raise
        return started

    def log_path(self, job: int) -> Path:
        """Where job `job`'s output goes."""
        return self.logs / f"{job}.log"

    def _output(self, job: int, log: str | None) -> Path:
        """Where job `job` writes: its own log file if that lies inside the runs root (links resolved),
        else `log_path(job)`: a queue.db from elsewhere never makes a job append to a file outside."""
        if log and safe_files.inside(self.root, log):
            return Path(log)
        return self.log_path(job)

    def _start(self, job: int, argv: list[str], log: Path) -> int:
        log.parent.mkdir(exist_ok=True)
        with open(log, "ab") as out:
            proc = subprocess.Popen(
                [sys.executable, "-m", "training", *argv],
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,  # a Ctrl-C in the submitting terminal does not kill queued work
            )
        return proc.pid

    def wait(self, job: int, poll: float = 0.5, timeout: float | None = None) -> str:
        """Dispatch until `job` ended or was cancelled; its final state."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            self.dispatch()
            state = self.state(job)
            if state in ("ended", "cancelled", ""):
                return state
            if deadline is not None and time.monotonic() > deadline:
                return state
            time.sleep(poll)
