"""A sweep on a database server (PostgreSQL): its URL as shown, its engine settings, its errors, its claim lock.

SQLite next to the runs is the embedded default; a team's workers on several machines share a
PostgreSQL database instead (`postgresql://USER:PASSWORD@HOST:5432/DB`, driven by psycopg 3, which
SQLAlchemy picks for `postgresql://`). What differs from a file storage lives here:

- the URL is shown with its password hidden (`***`) in every message and printed line, and stored
  or passed to the workers a sweep starts without it (`without_password`): queue.db and their
  command lines (`ps`) never hold it; they take it from $JAXDASH_STORAGE_PASSWORD (`with_env_password`),
  or libpq's own $PGPASSWORD and ~/.pgpass, as PostgreSQL's tools do;
- one engine per URL and process (the Sweeps page reloads every few seconds: a new engine each
  time would leave a pool of connections open on the server per reload), connections checked
  before use (a server restart or a dropped idle connection is reconnected, not a failed trial)
  and a connect timeout (an unreachable host is one line after 10 s, not a hang);
- an error opening it is one line naming the URL and the fix for that cause;
- workers claim trials one at a time under a PostgreSQL advisory lock, as workers sharing a
  SQLite file do under a file lock (`worker.claim_lock`): a program's trials stay together.
"""

from __future__ import annotations

import contextlib
import os
import threading
import zlib
from collections.abc import Iterator
from typing import Any

import optuna
import sqlalchemy
import sqlalchemy.exc
from sqlalchemy.engine import make_url

CONNECT_TIMEOUT_S = 10
# One advisory lock key for every jaxdash claim in a database (pg_advisory_lock takes a bigint).
CLAIM_KEY = zlib.crc32(b"jaxdash:sweep-claim")
# The password of a server URL given without one: how a sweep hands its own to the workers it starts
# (their environment, readable by this user only, not their command line).
PASSWORD_ENV = "JAXDASH_STORAGE_PASSWORD"
DRIVER_FIX = "pip install 'psycopg[binary]' (in requirements.txt; or pip install 'jax-dashboard[postgres]')"

# What a storage call raises when its database fails: Optuna wraps SQLAlchemy's errors in a commit.
STORAGE_ERRORS = (sqlalchemy.exc.SQLAlchemyError, optuna.exceptions.StorageInternalError)

_storages_lock = threading.Lock()
_storages: dict[str, Any] = {}


def is_server(url: str) -> bool:
    """A database server's URL (postgresql://, mysql://, ...), not a SQLite file or a journal."""
    return "://" in url and not url.startswith("sqlite")


def shown(url: str) -> str:
    """`url` as printed: a server URL's password replaced by `***`."""
    if not is_server(url):
        return url
    try:
        return make_url(url).render_as_string(hide_password=True)
    except (sqlalchemy.exc.ArgumentError, ValueError):
        return url.split("://", 1)[0] + "://..."  # unparsable: never echo what may hold a password


def without_password(url: str) -> tuple[str, str | None]:
    """(`url` with its password removed, the password): a server URL's password kept out of files and `ps`.

    A URL SQLAlchemy cannot parse, or one without a password, comes back as it is, with None.
    """
    if not is_server(url):
        return url, None
    try:
        parsed = make_url(url)
    except (sqlalchemy.exc.ArgumentError, ValueError):
        return url, None
    if parsed.password is None:
        return url, None
    return parsed._replace(password=None).render_as_string(hide_password=False), str(
        parsed.password
    )  # set() skips None


def with_env_password(url: str) -> str:
    """A server URL without a password, given $JAXDASH_STORAGE_PASSWORD's (a sweep's workers get it so);
    any other URL as it is (libpq reads $PGPASSWORD and ~/.pgpass itself)."""
    password = os.environ.get(PASSWORD_ENV)
    if not password or not is_server(url):
        return url
    try:
        parsed = make_url(url)
    except (sqlalchemy.exc.ArgumentError, ValueError):
        return url
    if parsed.password is not None:
        return url
    return parsed.set(password=password).render_as_string(hide_password=False)


def engine_kwargs(url: str) -> dict[str, Any]:
    """SQLAlchemy engine settings for a storage URL."""
    if url.startswith("sqlite"):
        # SQLite serialises writers; a patient connection keeps two workers from failing on "database is locked".
        return {"connect_args": {"timeout": 60}}
    kwargs: dict[str, Any] = {"pool_pre_ping": True}
    if url.startswith("postgres"):
        kwargs["connect_args"] = {"connect_timeout": CONNECT_TIMEOUT_S}  # libpq's, for psycopg and psycopg2
    return kwargs


def cached(url: str, make: Any) -> Any:
    """The storage of a server URL, made once per process by `make()`; a file URL's is made every time."""
    if not is_server(url):
        return make()
    with _storages_lock:
        if url not in _storages:
            _storages[url] = make()
        return _storages[url]


def open_error(url: str, exc: BaseException) -> str:
    """One line for a storage that could not be opened: the URL (password hidden), the cause, the fix."""
    cause = exc.__cause__ if isinstance(exc, ImportError) and exc.__cause__ else exc
    reason = " ".join(str(getattr(cause, "orig", None) or cause).split())  # psycopg's messages span lines
    if not is_server(url):
        return f"cannot open {url} ({reason}); check the URL and that its folder exists"
    scheme = url.split("://", 1)[0]
    if isinstance(exc, sqlalchemy.exc.NoSuchModuleError):
        fix = "write postgresql://USER:PASSWORD@HOST:PORT/DB" if scheme == "postgres" else "check the URL's scheme"
        return f"cannot open {shown(url)}: {scheme}:// is not a database SQLAlchemy knows; {fix}"
    if isinstance(exc, ImportError):
        if scheme in ("postgresql", "postgresql+psycopg"):
            fix = DRIVER_FIX
        elif scheme.startswith("postgresql"):
            fix = f"write postgresql:// for psycopg 3 (in requirements.txt), or install the driver {scheme} names"
        else:
            fix = f"install the Python driver for {scheme}"
        return f"cannot open {shown(url)}: its database driver is not installed ({reason}); {fix}"
    password = "password in the URL" if _has_password(url) else f"password (${PASSWORD_ENV}, $PGPASSWORD or ~/.pgpass)"
    return (
        f"cannot open {shown(url)} ({reason}); check that the server is running and reachable from this machine, "
        f"the user and database in the URL and the {password} (createdb DB makes the database)"
    )


def _has_password(url: str) -> bool:
    try:
        return make_url(url).password is not None
    except (sqlalchemy.exc.ArgumentError, ValueError):
        return True


def lost_error(url: str, exc: BaseException) -> str:
    """One line for a storage that failed mid-sweep (a server that went away, a database locked too long)."""
    cause = exc.__cause__ if isinstance(exc, optuna.exceptions.StorageInternalError) and exc.__cause__ else exc
    orig = getattr(cause, "orig", None)
    reason = " ".join(str(orig).split()) if orig else str(cause).splitlines()[0]
    return (
        f"{shown(url)} failed mid-sweep ({reason}); this worker stopped and its unfinished trials go back to the "
        "queue once their heartbeats are stale: start it again when the storage is reachable"
    )


@contextlib.contextmanager
def advisory_lock(storage: Any) -> Iterator[None]:
    """Hold a PostgreSQL session advisory lock while workers claim; a worker that dies drops its connection
    and with it the lock. A storage of another server (MySQL) claims without one."""
    engine = getattr(getattr(storage, "_backend", storage), "engine", None)
    if engine is None or engine.dialect.name != "postgresql":
        yield
        return
    with engine.connect() as conn:
        conn.execute(sqlalchemy.text("SELECT pg_advisory_lock(:k)"), {"k": CLAIM_KEY})
        conn.commit()  # session-level: the lock outlives this transaction, until unlocked or disconnected
        try:
            yield
        finally:
            conn.execute(sqlalchemy.text("SELECT pg_advisory_unlock(:k)"), {"k": CLAIM_KEY})
            conn.commit()
