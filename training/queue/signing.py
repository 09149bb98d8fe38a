"""Job rows signed with this user's key, so a queue.db from elsewhere never runs a command here.

A job is a command (`python -m training ARGV`, and ARGV may name any `module:Class`), so a crafted
`queue.db` in a runs root someone shared, unpacked or mounted would otherwise run its code when
the dashboard or a `--queue` run dispatches. Each row carries an HMAC-SHA256 of the runs root, the
job id, its arguments and its log path, keyed by a random secret that lives outside every runs
root: `$JAXDASH_CONFIG_DIR/queue.key` (default `~/.config/jaxdash/queue.key`, mode 0600, made on
first use). Dispatch starts only rows whose signature checks; any other row is refused with a
reason the page and the CLI show.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import secrets
from pathlib import Path

KEY_BYTES = 32
REFUSED = (
    "not signed by this user's queue key ({key}): it was not submitted from this account "
    "(a queue.db copied from elsewhere, or written by another program), so it was not run; start it again"
)


def key_path() -> Path:
    """Where this user's queue key lives: $JAXDASH_CONFIG_DIR, else $XDG_CONFIG_HOME/jaxdash, else ~/.config/jaxdash."""
    if os.environ.get("JAXDASH_CONFIG_DIR"):
        return Path(os.environ["JAXDASH_CONFIG_DIR"]) / "queue.key"
    base = os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config"
    return Path(base) / "jaxdash" / "queue.key"


def _key(create: bool) -> bytes | None:
    """The key's bytes; made (0600, written atomically) when missing and `create`; None if there is none."""
    path = key_path()
    with contextlib.suppress(FileNotFoundError):
        return path.read_bytes()
    if not create:
        return None
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(secrets.token_bytes(KEY_BYTES))
    try:
        os.link(tmp, path)  # the first process to get here wins; every other one reads its key
    except FileExistsError:
        pass
    finally:
        tmp.unlink()
    return path.read_bytes()


def _message(root: Path, job: int, argv_json: str, log: str | None) -> bytes:
    return json.dumps([str(root.resolve()), job, argv_json, log], separators=(",", ":")).encode()


def sign(root: Path, job: int, argv_json: str, log: str | None) -> str:
    """The signature of job `job` of the queue in `root` (the key is made on first use)."""
    return hmac.new(_key(create=True), _message(root, job, argv_json, log), hashlib.sha256).hexdigest()


def check(root: Path, job: int, argv_json: str, log: str | None, sig: str | None) -> str | None:
    """None when the row is signed by this user's key; else why it is refused."""
    key = _key(create=False)
    if key is not None and sig:
        want = hmac.new(key, _message(root, job, argv_json, log), hashlib.sha256).hexdigest()
        if hmac.compare_digest(want, sig):
            return None
    return REFUSED.format(key=key_path())
