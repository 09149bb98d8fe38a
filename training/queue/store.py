"""The run queue: every start waits here, and at most N training processes run at once.

A SQLite file next to the runs, `<runs root>/queue.db`, holds one row per job (the command's
arguments after `python -m training`). Anyone who submits (the CLI with `--queue`, a sweep, the
page) calls `dispatch`, which in one write transaction marks dead processes ended and starts
queued jobs, oldest first, while fewer than the limit run. Queued jobs have a position and can
be cancelled. The limit defaults to the cores and free memory (`default_limit`) and is settable.
Every row is signed with this user's key (training/queue/signing.py); dispatch refuses any other.
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
from training.queue import signing

PER_PROCESS_BYTES = 2 << 30  # a training process's share of memory when choosing the default limit
SCHEMA = """
create table if not exists jobs (
  id integer primary key autoincrement, argv text not null, label text not null,
  state text not null default 'queued', pid integer, created real, started real, ended real, rc integer
);
create table if not exists settings (key text primary key, value text);
"""
# Added in place to an older queue.db: the job's output file (a run folder's process.log), its
# signature, and why it was refused.
NEW_COLUMNS = ("log", "sig", "reason")
# This process's own job processes, kept so a dropped Popen is never reaped by the next
# subprocess call (subprocess._cleanup) before dispatch reads its exit code.
_CHILDREN: dict[int, subprocess.Popen] = {}
Start = Callable[[int, list[str], Path], int]  # (job id, argv after `python -m training`, log file) -> pid


def default_limit() -> int:
    """Processes at once: one per core, fewer when free memory cannot hold that many."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return max(1, min(cores, psutil.virtual_memory().available // PER_PROCESS_BYTES))


def _alive(pid: int) -> tuple[bool, int | None]:
    """(still running, exit code if it was our child and has ended)."""
    child = _CHILDREN.get(pid)
    if child is not None:  # started by this process: its Popen knows (and nothing else reaps it)
        rc = child.poll()
        if rc is not None:
            del _CHILDREN[pid]
        return rc is None, rc
    for _ in range(2):  # a child that exits between waitpid and psutil's look is reaped on the second pass
        try:
            done, status = os.waitpid(pid, os.WNOHANG)  # reaps a child of ours started elsewhere (the page's)
            if done:
                return False, os.waitstatus_to_exitcode(status)
        except ChildProcessError:
            pass  # started by another process: ask the system
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                return True, None
        except psutil.NoSuchProcess:
            return False, None
    return False, None


def _argv(text: str) -> list[str] | None:
    """A row's arguments, or None when they are not a JSON list of strings (a damaged or crafted row)."""
    try:
        argv = json.loads(text)
    except (TypeError, ValueError):
        return None
    return argv if isinstance(argv, list) and all(isinstance(a, str) for a in argv) else None


class Queue:
    """The queue of one runs root."""

    def __init__(self, root: Path | str):
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.path = self.root / "queue.db"
        self.logs = self.root / ".queue"
        with self._db() as db:
            db.executescript(SCHEMA)
            have = {r["name"] for r in db.execute("pragma table_info(jobs)")}
            for column in NEW_COLUMNS:
                if column not in have:
                    with contextlib.suppress(sqlite3.OperationalError):  # another process added it first
                        db.execute(f"alter table jobs add column {column} text")

    def _db(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=60, isolation_level=None)
        db.row_factory = sqlite3.Row
        return db

    def limit(self) -> int:
        """The most processes at once: the setting, else `default_limit()`."""
        with self._db() as db:
            row = db.execute("select value from settings where key='limit'").fetchone()
        value = str(row["value"]) if row else ""
        return int(value) if value.isdigit() and int(value) >= 1 else default_limit()

    def set_limit(self, n: int) -> None:
        """Allow `n` (>= 1) processes at once."""
        if n < 1:
            raise ValueError(f"the queue's limit must be >= 1 (got {n})")
        with self._db() as db:
            db.execute("insert or replace into settings values ('limit', ?)", (str(n),))

    def submit(self, argv: list[str], label: str = "", log: Path | None = None) -> int:
        """Queue `python -m training ARGV` (its output to `log`, else `log_path(job)`); returns the job id."""
        argv_json, log_text = json.dumps(argv), str(log) if log else None
        with self._db() as db:
            db.execute("begin immediate")  # not dispatched before it is signed
            cur = db.execute(
                "insert into jobs (argv, label, created, log) values (?, ?, ?, ?)",
                (argv_json, label or " ".join(argv[:1]), time.time(), log_text),
            )
            job = int(cur.lastrowid)
            db.execute("update jobs set sig=? where id=?", (signing.sign(self.root, job, argv_json, log_text), job))
            db.execute("commit")
        return job

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
            r["argv"] = _argv(r["argv"])
            if r["state"] == "queued":
                position += 1
                r["position"] = position
        return rows

    def job(self, job: int) -> dict[str, Any] | None:
        """Job `job` as in `jobs()` (with its position while queued), or None for an unknown id."""
        return next((j for j in self.jobs() if j["id"] == job), None)

    def state(self, job: int) -> str:
        """'queued', 'running', 'ended', 'cancelled' or 'refused' ('' for an unknown id)."""
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
                queued = self._signed(db)
                for r in queued[: max(0, limit - running)]:
                    log = self._output(r["id"], r["log"])
                    pid = (start or self._start)(r["id"], _argv(r["argv"]), log)
                    db.execute(
                        "update jobs set state='running', pid=?, started=? where id=?", (pid, time.time(), r["id"])
                    )
                    started.append(r["id"])
                db.execute("commit")
            except BaseException:
                db.execute("rollback")
                raise
        return started

    def _signed(self, db: sqlite3.Connection) -> list[sqlite3.Row]:
        """The queued rows signed by this user's key, oldest first; every other queued row is refused."""
        signed = []
        for r in db.execute("select id, argv, log, sig from jobs where state='queued' order by id").fetchall():
            why = signing.check(self.root, r["id"], r["argv"], r["log"], r["sig"])
            if why is None and isinstance(_argv(r["argv"]), list):
                signed.append(r)
            else:
                db.execute(
                    "update jobs set state='refused', ended=?, reason=? where id=?",
                    (time.time(), f"job {r['id']} is {why or 'unreadable'}", r["id"]),
                )
        return signed

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
        _CHILDREN[proc.pid] = proc
        return proc.pid

    def wait(self, job: int, poll: float = 0.5, timeout: float | None = None) -> str:
        """Dispatch until `job` ended, was cancelled or refused; its final state."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            self.dispatch()
            state = self.state(job)
            if state in ("ended", "cancelled", "refused", ""):
                return state
            if deadline is not None and time.monotonic() > deadline:
                return state
            time.sleep(poll)
