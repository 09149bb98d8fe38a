"""Reading a run folder that anyone may have crafted: regular files only, never through a link, never blocking.

A run folder can come from anywhere (copied from another machine, unpacked from an archive), and
the dashboard reads it as whatever user runs the server. So every file the page reads is opened
with O_NOFOLLOW (a symlink is refused, not followed out of the runs root) and O_NONBLOCK (opening a
FIFO for reading would otherwise wait for a writer forever), then checked with fstat to be a
regular file; every name read back from a file's content (a cache part, an artifact) must be a
plain name. No JAX here: the dashboard imports this module.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from pathlib import Path
from typing import IO

# A file name written by us: no separators, no "..", no leading dot (hidden and temp files).
PLAIN_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._ =,+@-]*")
NOT_REGULAR = "not a regular file (a link, FIFO, device or socket is never read)"


def plain_name(name: object) -> bool:
    """True for a single file name of ours: no '/', no '..', no leading dot, at most 255 bytes."""
    return (
        isinstance(name, str)
        and PLAIN_NAME.fullmatch(name) is not None
        and ".." not in name
        and len(name.encode(errors="replace")) <= 255
    )


def open_regular(path: str | os.PathLike, mode: str = "rb") -> IO:
    """`path` opened for reading if it is a regular file that is not a symlink; never blocks.

    Raises:
      OSError: missing (FileNotFoundError), a symlink (ELOOP), or not a regular file (EINVAL),
        each naming the path.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, NOT_REGULAR, str(path))
        os.set_blocking(fd, True)
        return os.fdopen(fd, mode)
    except BaseException:
        os.close(fd)
        raise


def read_regular(path: str | os.PathLike, max_bytes: int = -1) -> bytes:
    """The bytes of a regular, non-link file (at most `max_bytes`); raises OSError as `open_regular`."""
    with open_regular(path) as f:
        return f.read(max_bytes)


def is_regular(path: str | os.PathLike) -> bool:
    """True if `path` is a regular file and not a symlink (lstat: nothing is opened)."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def is_real_dir(path: str | os.PathLike) -> bool:
    """True if `path` is a directory and not a symlink to one."""
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def inside(folder: str | os.PathLike, path: str | os.PathLike) -> bool:
    """True if `path`, every link resolved, lies inside `folder` (also resolved)."""
    try:
        base = os.path.realpath(folder)
        return os.path.commonpath([base, os.path.realpath(path)]) == base
    except (OSError, ValueError):
        return False


# ---- Writing: never through a link, never outside the folder a file must stay in ----------------------------------


class UnsafePath(OSError):
    """A file jaxdash was about to write is a link, not a regular file, or lies outside its folder; str() is one line."""

    def __str__(self) -> str:
        return f"{self.filename}: {self.strerror}"


LINK_REFUSED = (
    "is a symbolic link (to {target}); jaxdash never writes through a link: remove the link or name the real file"
)
OUTSIDE_REFUSED = "lies outside {root} once links are resolved (a linked folder?); jaxdash writes only inside it"
SQLITE_SIDECARS = ("", "-journal", "-wal", "-shm")  # SQLite writes these next to a database


def check_writable(path: str | os.PathLike, root: str | os.PathLike | None = None) -> Path:
    """`path`, checked before a file there is created or written: it is not a symbolic link and, given
    `root`, it lies inside `root` with every link resolved (a linked folder cannot lead a write elsewhere).

    Raises:
      UnsafePath: one line naming the path, why it is refused and the fix.
    """
    path = Path(path)
    if os.path.islink(path):
        try:
            target = os.readlink(path)
        except OSError:
            target = "?"
        raise UnsafePath(errno.ELOOP, LINK_REFUSED.format(target=target), str(path))
    if root is not None and not inside(root, path):
        raise UnsafePath(errno.EXDEV, OUTSIDE_REFUSED.format(root=root), str(path))
    return path


def check_sqlite(path: str | os.PathLike, root: str | os.PathLike | None = None) -> str:
    """A SQLite database's path as a string for `sqlite3.connect`, once it and the files SQLite writes
    beside it (-journal, -wal, -shm) pass `check_writable`. Raises UnsafePath."""
    for suffix in SQLITE_SIDECARS:
        check_writable(f"{path}{suffix}", root)
    return str(path)


def open_append(path: str | os.PathLike, root: str | os.PathLike | None = None) -> int:
    """A file descriptor appending to `path` (made if missing, 0644): never through a link (O_NOFOLLOW,
    and `check_writable` for its folders), never a FIFO or device (fstat), never blocking.

    Raises:
      UnsafePath: a link, not a regular file, or outside `root`; other OSError (e.g. a missing folder) as usual.
    """
    path = check_writable(path, root)
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(path, flags, 0o644)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENXIO):  # a link planted since the check; a FIFO without a reader
            raise UnsafePath(exc.errno, NOT_REGULAR, str(path)) from None
        raise
    return regular_fd(fd, path)


def regular_fd(fd: int, shown: str | os.PathLike, reason: str = NOT_REGULAR) -> int:
    """`fd`, made blocking, if it is a regular file; else it is closed and UnsafePath names `shown` (a FIFO with a
    reader, a device: what an O_NOFOLLOW | O_NONBLOCK open lets through), with `reason`."""
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise UnsafePath(errno.EINVAL, reason, str(shown))
        os.set_blocking(fd, True)
        return fd
    except BaseException:
        os.close(fd)
        raise
