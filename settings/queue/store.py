"""The run queue: every start waits here, and at most N training processes run at once.

A SQLite file next to the runs, `<runs root>/queue.db`, holds one row per job (the command's
arguments after `python -m training`). Anyone who submits (the CLI with `--queue`, a sweep, the
page) calls `dispatch`, which in one write transaction marks dead processes ended and starts
queued jobs, oldest first, while fewer than the limit run. Queued jobs have a position and can
be cancelled. The limit defaults to the cores and free memory (`default_limit`) and is settable.
Every row is signed with this user's key and carries a nonce spent when it starts
(settings/queue/signing.py); dispatch refuses any other row and any row started before.
queue.db (and the job logs under `.queue/`) are never written through a link or outside the runs
root (runstore/safe_files.py); queue.db is readable by its owner only (0600), and a job's secrets
(a sweep worker's database password) travel in its environment, never in its row; a damaged, read-only, locked or linked queue.db raises `QueueError`,
one line saying what is wrong and what to do.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psutil

from runstore import private_files, safe_files
from settings.queue import signing
from settings.queue.children import adopt, job_alive
from settings.queue.errors import QueueError, describe

__all__ = ["Queue", "QueueError", "adopt", "default_limit"]

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
NEW_COLUMNS = ("log", "sig", "reason", "nonce")
WAIT_S = 60.0  # how long a CLI or sweep submission waits for another process's write to queue.db
Start = Callable[[int, list[str], Path], int]  # (job id, argv after `python -m training`, log file) -> pid


def default_limit() -> int:
    """Processes at once: one per core, fewer when free memory cannot hold that many."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return max(1, min(cores, psutil.virtual_memory().available // PER_PROCESS_BYTES))


def _argv(text: str) -> list[str] | None:
    """A row's arguments, or None when they are not a JSON list of strings (a damaged or crafted row)."""
    try:
        argv = json.loads(text)
    except (TypeError, ValueError):
        return None
    return argv if isinstance(argv, list) and all(isinstance(a, str) for a in argv) else None


class Queue:
    """The queue of one runs root."""

    def __init__(self, root: Path | str, wait_s: float = WAIT_S):
        """The queue of `root`; `wait_s`: how long to wait for a write lock before QueueError (the page waits briefly).

        Raises:
          QueueError: queue.db is damaged, read-only, locked or a link (one line naming it and the fix).
        """
        self.root = Path(root)
        self.path = self.root / "queue.db"
        self.logs = self.root / ".queue"
        self.wait_s = wait_s
        self._env: dict[int, dict[str, str]] = {}  # extra environment of jobs this object submitted (secrets)
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            if not private_files.create_private(self.path):  # 0600: its rows are this user's commands
                private_files.tighten(self.path)  # one made before may hold a password in its old rows
        except OSError as exc:
            raise QueueError(describe(exc, self.path, wait_s)) from None
        with self._db() as db:
            db.executescript(SCHEMA)
            have = {r["name"] for r in db.execute("pragma table_info(jobs)")}
            for column in NEW_COLUMNS:
                if column not in have:
                    with contextlib.suppress(sqlite3.OperationalError):  # another process added it first
                        db.execute(f"alter table jobs add column {column} text")

    @contextlib.contextmanager
    def _db(self) -> Iterator[sqlite3.Connection]:
        """A connection to queue.db opened on a checked path (no link, inside the runs root), closed after;
        every SQLite or file error leaves as one QueueError line."""
        try:
            db = sqlite3.connect(
                safe_files.check_sqlite(self.path, self.root), timeout=self.wait_s, isolation_level=None
            )
        except (OSError, sqlite3.Error) as exc:
            raise QueueError(describe(exc, self.path, self.wait_s)) from None
        db.row_factory = sqlite3.Row
        try:
            yield db
        except (sqlite3.Error, safe_files.UnsafePath) as exc:
            raise QueueError(describe(exc, self.path, self.wait_s)) from None
        finally:
            db.close()

    def write_problem(self) -> str | None:
        """Why queue.db cannot be written now (a read-only or immutable file), one line; None if it can.
        Nothing is written: the file is only opened for writing (the page asks every refresh)."""
        try:
            os.close(os.open(self.path, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC))
        except FileNotFoundError:
            return None
        except OSError as exc:
            return describe(exc, self.path, self.wait_s)
        return None

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

    def submit(
        self, argv: list[str], label: str = "", log: Path | None = None, env: dict[str, str] | None = None
    ) -> int:
        """Queue `python -m training ARGV` (its output to `log`, else `log_path(job)`); returns the job id.

        `env`: variables added to the job's environment when this object starts it (a password: never
        written to queue.db; a job another process starts runs without them).
        """
        argv_json, log_text, nonce = json.dumps(argv), str(log) if log else None, signing.new_nonce()
        signing.sign(self.root, 0, argv_json, log_text, nonce)  # a refused key (KeyRefused) before any row is written
        with self._db() as db:
            db.execute("begin immediate")  # not dispatched before it is signed
            try:
                cur = db.execute(
                    "insert into jobs (argv, label, created, log, nonce) values (?, ?, ?, ?, ?)",
                    (argv_json, label or " ".join(argv[:1]), time.time(), log_text, nonce),
                )
                job = int(cur.lastrowid)
                sig = signing.sign(self.root, job, argv_json, log_text, nonce)
                db.execute("update jobs set sig=? where id=?", (sig, job))
                db.execute("commit")
            except BaseException:
                if db.in_transaction:
                    db.execute("rollback")
                raise
        if env:
            self._env[job] = dict(env)
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
                    alive, rc = job_alive(r["pid"])
                    if alive:
                        running += 1
                    else:
                        db.execute(
                            "update jobs set state='ended', ended=?, rc=? where id=?", (time.time(), rc, r["id"])
                        )
                queued = self._signed(db)
                for r in queued[: max(0, limit - running)]:
                    if self._start_row(db, r, start or self._start):
                        started.append(r["id"])
                db.execute("commit")
            except BaseException:
                if db.in_transaction:
                    db.execute("rollback")
                raise
        return started

    def _signed(self, db: sqlite3.Connection) -> list[sqlite3.Row]:
        """The queued rows signed by this user's key, oldest first; every other queued row is refused."""
        signed = []
        rows = db.execute("select id, argv, log, sig, nonce from jobs where state='queued' order by id").fetchall()
        for r in rows:
            why = signing.check(self.root, r["id"], r["argv"], r["log"], r["sig"], r["nonce"])
            if why is None and isinstance(_argv(r["argv"]), list):
                signed.append(r)
            else:
                self._refuse(db, r["id"], why or "unreadable")
        return signed

    def _start_row(self, db: sqlite3.Connection, row: sqlite3.Row, start: Start) -> bool:
        """Start one signed queued row (True), or refuse it with why (False): its nonce was spent
        already (a replayed row), or its log is a link or leads outside the runs root."""
        why = signing.spend(row["nonce"])  # before it starts: a crash in between never runs it twice
        pid = None
        try:
            pid = None if why else start(row["id"], _argv(row["argv"]), self._output(row))
        except safe_files.UnsafePath as exc:  # its log is a link, or leads outside the runs root
            why = f"not started: {exc}"
        except OSError as exc:  # e.g. its run folder was removed; its nonce is spent, so say why here
            why = f"not started: {exc}"
        if pid is None:
            self._refuse(db, row["id"], why or "not started")
            return False
        db.execute("update jobs set state='running', pid=?, started=? where id=?", (pid, time.time(), row["id"]))
        return True

    @staticmethod
    def _refuse(db: sqlite3.Connection, job: int, why: str) -> None:
        """Mark job `job` refused, with why (the page and the CLI show "The run queue refused job N is ...")."""
        db.execute(
            "update jobs set state='refused', ended=?, reason=? where id=?", (time.time(), f"job {job} is {why}", job)
        )

    def log_path(self, job: int) -> Path:
        """Where job `job`'s output goes."""
        return self.logs / f"{job}.log"

    def _output(self, row: sqlite3.Row) -> Path:
        """Where a job writes: its own log file if that lies inside the runs root (links resolved), else
        `log_path(job)`; either way checked (no link, inside the runs root: raises UnsafePath), so a
        queue.db from elsewhere, a linked `.queue` folder or a planted `<job>.log` link never makes a
        job append to a file outside."""
        log = row["log"]
        path = Path(log) if log and safe_files.inside(self.root, log) else self.log_path(row["id"])
        if path.parent == self.logs and not self.logs.exists():
            with contextlib.suppress(FileExistsError):
                self.logs.mkdir()
        return safe_files.check_writable(path, self.root)

    def _start(self, job: int, argv: list[str], log: Path) -> int:
        log.parent.mkdir(exist_ok=True)  # checked by _output: inside the runs root, links resolved
        with os.fdopen(safe_files.open_append(log, self.root), "ab") as out:
            proc = subprocess.Popen(
                [sys.executable, "-m", "training", *argv],
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,  # a Ctrl-C in the submitting terminal does not kill queued work
                env={**os.environ, **self._env[job]} if job in self._env else None,
            )
        adopt(proc)
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
