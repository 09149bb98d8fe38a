"""The run index: an SQLite file in the runs root (`.index.sqlite`) of every run's identity, kind, state,
flattened config, tags, notes and summary, for lists and queries over many runs.

The run folders stay the source of truth: the index is built from them and kept current by `update`,
which re-reads only a folder whose small files' (size, mtime) changed, reads only the records appended
since the last update, and re-checks active runs (their process may die without a file changing). A
missing, damaged or older-schema index is rebuilt from scratch with one log line. One process writes at
a time (an exclusive lock on `.index.lock`; a second writer skips its update); readers use SQLite's WAL
and never wait for the writer (`runstore.index_reader`). No JAX and no Streamlit here.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import math
import os
import sqlite3
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runstore import index_rows, run_store

INDEX = ".index.sqlite"  # hidden: the runs root lists no dot entries as runs
LOCK = ".index.lock"
SCHEMA_VERSION = "4"
BATCH = 500  # runs a transaction: readers see a first build grow
log = logging.getLogger("jaxdash")

SCHEMA = """
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE runs(
  id INTEGER PRIMARY KEY, run_id TEXT NOT NULL, path TEXT UNIQUE NOT NULL, name TEXT, kind TEXT, state TEXT,
  message TEXT, task TEXT, grp TEXT, created REAL, notes TEXT, job_type TEXT, config_json TEXT, tags_json TEXT,
  summary_json TEXT, records_json TEXT, sig TEXT, rec_ino INTEGER, rec_size INTEGER, rec_mtime INTEGER,
  rec_offset INTEGER, member INTEGER, updated REAL, phase TEXT, stopped INTEGER);
CREATE INDEX runs_run_id ON runs(run_id);
CREATE INDEX runs_population ON runs(grp, created) WHERE kind = 'member';
CREATE TABLE config(run INTEGER, key TEXT, vtype TEXT, value, PRIMARY KEY(run, key)) WITHOUT ROWID;
CREATE INDEX config_key ON config(key, value);
CREATE TABLE summary(run INTEGER, key TEXT, last, min REAL, max REAL, PRIMARY KEY(run, key)) WITHOUT ROWID;
CREATE INDEX summary_key ON summary(key);
CREATE TABLE tags(run INTEGER, tag TEXT COLLATE NOCASE, PRIMARY KEY(run, tag)) WITHOUT ROWID;
CREATE INDEX tags_tag ON tags(tag);
"""


class IndexDamaged(Exception):
    """The index file is not an index of this schema (it is rebuilt)."""


def index_path(root: str | os.PathLike | None = None) -> Path:
    """Where the runs root's index lives."""
    return run_store.runs_root(root) / INDEX


def connect(path: Path) -> sqlite3.Connection:
    """A connection in WAL mode (readers never wait for the writer), committing explicitly."""
    con = sqlite3.connect(path, timeout=5.0, isolation_level=None, check_same_thread=False)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("PRAGMA synchronous=NORMAL")  # the index can always be rebuilt: no fsync a commit
    return con


def _remove(path: Path) -> None:
    for p in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        with contextlib.suppress(FileNotFoundError):
            p.unlink()  # a link planted here is removed itself, never followed


class OtherSchema(IndexDamaged):
    """The index file is an index of another schema version (it is rebuilt: its columns are not this one's)."""


def _check(con: sqlite3.Connection) -> None:
    row = con.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
    if row is None:
        raise IndexDamaged("no schema version")
    if row[0] != SCHEMA_VERSION:
        raise OtherSchema(f"of schema {row[0]}, this version reads schema {SCHEMA_VERSION}")


def open_index(root: str | os.PathLike | None = None, why: str = "missing") -> sqlite3.Connection:
    """The root's index for writing, rebuilt empty (one log line saying `why`) when missing, damaged or of another
    schema. Call it holding the writer lock (`writer_lock`)."""
    path = index_path(root)
    if path.is_symlink() or (path.exists() and not path.is_file()):
        why = "not a regular file"
    elif path.exists():
        try:
            con = connect(path)
            _check(con)
            return con
        except OtherSchema as exc:
            why = str(exc)
            con.close()
        except (sqlite3.Error, IndexDamaged) as exc:
            why = f"damaged ({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})"
            with contextlib.suppress(NameError, sqlite3.Error):
                con.close()
    log.warning("run index %s: %s; building it from the run folders", path, why)
    _remove(path)
    con = connect(path)
    con.executescript(SCHEMA)
    con.execute("INSERT INTO meta VALUES ('schema', ?)", (SCHEMA_VERSION,))
    return con


@contextlib.contextmanager
def writer_lock(root: str | os.PathLike | None = None) -> Iterator[bool]:
    """Yields True when this caller is the index's one writer now, False while another process (or thread) is."""
    fd = os.open(run_store.runs_root(root) / LOCK, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            mine = True
        except BlockingIOError:
            mine = False
        yield mine
    finally:
        os.close(fd)  # releases the lock


def _typed(value: Any) -> tuple[str, Any]:
    """(vtype, value) of a config value as SQL holds it: numbers, text, booleans as 0/1, anything else as JSON."""
    if isinstance(value, bool):
        return "bool", int(value)
    if isinstance(value, (int, float)) and math.isfinite(value):
        return "num", float(value) if abs(value) >= 2**63 else value
    if isinstance(value, str):
        return "str", value
    return "json", json.dumps(value, sort_keys=True, default=str)


def _delete(con: sqlite3.Connection, rowid: int) -> None:
    for table, column in (("config", "run"), ("summary", "run"), ("tags", "run"), ("runs", "id")):
        con.execute(f"DELETE FROM {table} WHERE {column} = ?", (rowid,))  # table names are constants


def _write(con: sqlite3.Connection, run: index_rows.IndexedRun, sig: str, rec: tuple[int, int, int], offset: int,
           ) -> None:  # fmt: skip
    old = con.execute("SELECT id FROM runs WHERE path = ?", (run.path,)).fetchone()
    if old:
        _delete(con, old[0])
    dumps, progress = json.dumps, run.progress or index_rows.Progress()
    cur = con.execute(
        "INSERT INTO runs(run_id, path, name, kind, state, message, task, grp, created, notes, job_type, config_json,"
        " tags_json, summary_json, records_json, sig, rec_ino, rec_size, rec_mtime, rec_offset, member, updated, phase,"
        " stopped) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
        (run.run_id, run.path, run.name, run.kind, run.state, run.message, run.task, run.group, run.created,
         run.notes, run.job_type, dumps(run.config, default=str), dumps(run.tags), dumps(run.summary), dumps(run.records), sig,
         *rec, offset, run.member, progress.updated, progress.phase, int(progress.stopped)),
    )  # fmt: skip
    rowid = cur.lastrowid
    con.executemany("INSERT INTO config VALUES (?,?,?,?)", [(rowid, k, *_typed(v)) for k, v in run.flat_config.items()])
    con.executemany("INSERT INTO summary VALUES (?,?,?,?,?)", [(rowid, k, *v) for k, v in run.summary.items()])
    con.executemany("INSERT OR IGNORE INTO tags VALUES (?,?)", [(rowid, t) for t in run.tags])


@dataclass
class Update:
    """What one update did."""

    read: int = 0  # folders read (new or changed)
    kept: int = 0  # folders unchanged, not read
    removed: int = 0  # runs whose folder is gone
    seconds: float = 0.0


def _known(con: sqlite3.Connection) -> dict[str, tuple]:
    """Each indexed run by its folder's path (a logdir's mirror may share its id with a run of the root)."""
    rows = con.execute("SELECT path, id, sig, rec_ino, rec_size, rec_mtime, rec_offset, state FROM runs")
    return {r[0]: r[1:] for r in rows}


def _records(con: sqlite3.Connection, rowid: int) -> index_rows.Stats:
    """The stats of a run's records read so far (to fold the new records into)."""
    row = con.execute("SELECT records_json FROM runs WHERE id = ?", (rowid,)).fetchone()
    return json.loads(row[0] or "{}") if row else {}


def _folders(root: Path) -> list[Path]:
    """Every folder the Runs page lists a run from: the root's own, and the mirrors of a TensorBoard logdir's runs
    (kept current by the dashboard that reads the logdir; the index reads them as they are)."""
    mirrors = root / index_rows.LOGDIR_MIRRORS
    real = mirrors.is_dir() and not mirrors.is_symlink()  # a link planted there is never followed out of the root
    return run_store.run_folders(root) + (run_store.run_folders(mirrors) if real else [])


def _sync(con: sqlite3.Connection, root: Path) -> Update:
    """Bring the index up to date with the folders under `root` (one transaction every BATCH runs read)."""
    out, started = Update(), time.perf_counter()
    known = _known(con)
    con.execute("BEGIN")
    for d in _folders(root):
        sig, rec = index_rows.signature(d), index_rows.records_key(d)
        k = known.pop(str(d), None)
        if k and k[1] == sig and tuple(k[2:5]) == rec and not index_rows.is_active(k[6]):
            out.kept += 1
            continue
        same_file = k is not None and k[2] == rec[0] and rec[1] >= (k[5] or 0)  # appended to, not replaced
        records, offset = (_records(con, k[0]), k[5] or 0) if same_file else (None, 0)
        run, offset = index_rows.read(d, records, offset)
        if run is None:
            if k:
                _delete(con, k[0])
            continue
        _write(con, run, sig, rec, offset)
        out.read += 1
        if out.read % BATCH == 0:
            con.execute("COMMIT")
            con.execute("BEGIN")
    for info in run_store.linked_runs(root):  # listed as damaged, never read
        k = known.pop(str(info.path), None)
        if k is None or k[1] != "link":
            damaged = index_rows.IndexedRun(info.run_id, str(info.path), info.name, "damaged", "damaged",
                                            info.status.get("message", ""), info.task, "", info.created)  # fmt: skip
            _write(con, damaged, "link", (0, -1, 0), 0)
    for gone in known.values():
        _delete(con, gone[0])
        out.removed += 1
    con.execute("COMMIT")
    out.seconds = time.perf_counter() - started
    return out


def update(root: str | os.PathLike | None = None) -> Update | None:
    """Bring the root's index up to date (building it when missing or damaged); None when the root does not
    exist or another writer holds the index now (its update serves this caller's readers too)."""
    root = run_store.runs_root(root)
    if not root.is_dir():
        return None
    with writer_lock(root) as mine:
        if not mine:
            return None
        con = open_index(root)
        try:
            return _sync(con, root)
        except sqlite3.DatabaseError as exc:  # damaged under us (a disk error, a hand edit): start over once
            con.close()
            _remove(index_path(root))
            con = open_index(root, f"damaged ({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})")
            return _sync(con, root)
        finally:
            con.close()
