"""Files readable by their owner only (0600): the run queue, a sweep's database or journal.

A runs root may live on a team's shared filesystem, where every user reads whatever the umask
leaves readable (0644 by default). The files that hold one user's commands or a study's settings
are made 0600 when jaxdash creates them, before anything is written to them (SQLite gives its
-journal, -wal and -shm files the database's mode). Nothing here follows a link: a planted link
is left for the caller's own check to refuse.
"""

from __future__ import annotations

import contextlib
import os
import stat

PRIVATE = 0o600


def create_private(path: str | os.PathLike) -> bool:
    """Make `path` an empty 0600 file if nothing is there (True); False when something already is
    (a file, or a link: never followed). Raises OSError for other failures (a missing folder, a full disk)."""
    flags = os.O_RDONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(path, flags, PRIVATE)
    except FileExistsError:
        return False
    os.close(fd)
    return True


def tighten(path: str | os.PathLike) -> None:
    """Take group's and others' access away from `path` if it is this user's regular file (not a link);
    anything else (missing, a link, another user's file) is left as it is."""
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        try:
            st = os.fstat(fd)
            if stat.S_ISREG(st.st_mode) and st.st_uid == os.getuid() and st.st_mode & 0o077:
                os.fchmod(fd, stat.S_IMODE(st.st_mode) & ~0o077)
        finally:
            os.close(fd)
