"""Job rows signed with this user's key, so a queue.db from elsewhere never runs a command here, and no row runs twice.

A job is a command (`python -m training ARGV`, and ARGV may name any `module:Class`), so a crafted
`queue.db` in a runs root someone shared, unpacked or mounted would otherwise run its code when
the dashboard or a `--queue` run dispatches. Each row carries an HMAC-SHA256 of the runs root, the
job id, its arguments, its log path and a random nonce, keyed by a random secret that lives outside
every runs root: `$JAXDASH_CONFIG_DIR/queue.key` (default `~/.config/jaxdash/queue.key`, mode 0600,
made on first use). A key shorter than KEY_BYTES, or one that another user could read, is refused
with one line saying how to fix it. Dispatch starts only rows whose signature checks, and spends
each row's nonce in `queue-spent.db` beside the key first: a row that ended and was set back to
`queued` (a replay) finds its nonce spent and is refused, not run again.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import secrets
import sqlite3
import stat
import time
from pathlib import Path

from settings.queue.errors import QueueError, describe

KEY_BYTES = 32
SPENT_WAIT_S = 60.0  # how long a dispatch waits for another's write to queue-spent.db
# What to do when queue-spent.db is damaged (queue.db is not: it is left alone).
SPENT_DAMAGED_FIX = (
    "move it away and a new one is made (it records which queued jobs already started; queue.db is not affected)"
)
REFUSED = (
    "not signed by this user's queue key ({key}): it was not submitted from this account "
    "(a queue.db copied from elsewhere, or written by another program), so it was not run; start it again"
)
REPLAYED = (
    "already started once (nonce {nonce} is spent in {spent}): an ended row set back to 'queued' never runs "
    "again; submit it anew"
)


class KeyRefused(PermissionError):
    """The queue key cannot be trusted (too short, readable by others); str() is one line naming the file and the fix."""

    def __str__(self) -> str:
        return str(self.args[0])


def key_path() -> Path:
    """Where this user's queue key lives: $JAXDASH_CONFIG_DIR, else $XDG_CONFIG_HOME/jaxdash, else ~/.config/jaxdash."""
    if os.environ.get("JAXDASH_CONFIG_DIR"):
        return Path(os.environ["JAXDASH_CONFIG_DIR"]) / "queue.key"
    base = os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config"
    return Path(base) / "jaxdash" / "queue.key"


def _read_key(path: Path) -> bytes:
    """The key's bytes, once its owner, mode and length are checked. Raises FileNotFoundError or KeyRefused."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise KeyRefused(f"{path}: not a regular file; delete it and jaxdash makes a new queue key")
        if st.st_uid != os.getuid():
            raise KeyRefused(f"{path}: owned by another user (uid {st.st_uid}); delete it and a new key is made")
        if st.st_mode & 0o077:
            raise KeyRefused(
                f"{path}: readable by group or others (mode {stat.S_IMODE(st.st_mode):04o}), so they could queue "
                f"commands as you; fix: chmod 600 {path}"
            )
        key = f.read(4096)
    if len(key) < KEY_BYTES:
        raise KeyRefused(
            f"{path}: {len(key)} bytes, a queue key needs at least {KEY_BYTES} random bytes; fix: delete it "
            "(jaxdash makes a new one; jobs queued with the old key must be submitted again)"
        )
    return key


def _key(create: bool) -> bytes | None:
    """The key's bytes; made (0600, written atomically) when missing and `create`; None if there is none.

    Raises:
      KeyRefused: the key file exists but is too short or readable by others.
    """
    path = key_path()
    with contextlib.suppress(FileNotFoundError):
        return _read_key(path)
    if not create:
        return None
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(secrets.token_bytes(KEY_BYTES))
    try:
        os.link(tmp, path)  # the first process to get here wins; every other one reads its key
    except FileExistsError:
        pass
    finally:
        tmp.unlink()
    return _read_key(path)


def new_nonce() -> str:
    """A fresh random nonce for one job row (signed with it, spent when it starts)."""
    return secrets.token_hex(16)


def _message(root: Path, job: int, argv_json: str, log: str | None, nonce: str | None) -> bytes:
    return json.dumps([str(root.resolve()), job, argv_json, log, nonce], separators=(",", ":")).encode()


def sign(root: Path, job: int, argv_json: str, log: str | None, nonce: str) -> str:
    """The signature of job `job` of the queue in `root` (the key is made on first use). Raises KeyRefused."""
    return hmac.new(_key(create=True), _message(root, job, argv_json, log, nonce), hashlib.sha256).hexdigest()


def check(root: Path, job: int, argv_json: str, log: str | None, sig: str | None, nonce: str | None) -> str | None:
    """None when the row is signed by this user's key; else why it is refused (one line)."""
    try:
        key = _key(create=False)
    except (KeyRefused, OSError) as exc:
        return f"not run: {exc}"
    if key is not None and sig and nonce:
        want = hmac.new(key, _message(root, job, argv_json, log, nonce), hashlib.sha256).hexdigest()
        if hmac.compare_digest(want, sig):
            return None
    return REFUSED.format(key=key_path())


def spent_path() -> Path:
    """The record of started rows' nonces, beside the key (outside every runs root, so a queue.db cannot rewrite it)."""
    return key_path().with_name("queue-spent.db")


def spend(nonce: str) -> str | None:
    """Record that the row with `nonce` starts now: None the first time, else why it must not run (a replay).

    Raises:
      QueueError: queue-spent.db cannot be used (damaged, locked, read-only): one line naming it, not queue.db.
    """
    path = spent_path()
    try:
        db = sqlite3.connect(path, timeout=SPENT_WAIT_S, isolation_level=None)
        try:
            db.execute("create table if not exists spent (nonce text primary key, at real)")
            try:
                db.execute("insert into spent values (?, ?)", (nonce, time.time()))
            except sqlite3.IntegrityError:
                return REPLAYED.format(nonce=nonce[:8], spent=path)
        finally:
            db.close()
    except sqlite3.Error as exc:
        fix = f"make {path.parent} writable"
        raise QueueError(describe(exc, path, SPENT_WAIT_S, SPENT_DAMAGED_FIX, fix)) from None
    return None
