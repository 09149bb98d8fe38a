"""The one write path for everything under a run folder: no link followed, no FIFO opened blocking, nothing
created outside it.

A run folder may be one a script resumes into after someone planted links or FIFOs in it (`files/` linked to
another user's folder, `metrics.jsonl` a FIFO). So a write below the run folder (`root`) walks from the run
folder's own descriptor one component at a time: each folder is opened with O_NOFOLLOW | O_DIRECTORY relative
to its parent's descriptor (`dir_fd=`), and a missing one is made through that descriptor only after its
parent is known to be a real folder of the run. The file itself is then replaced (a temp file made with
O_EXCL | O_NOFOLLOW, renamed over the name: a link there is replaced, never written through) or appended to
(O_NOFOLLOW | O_NONBLOCK, and fstat says it is a regular file). A refused path raises `UnsafePath`, whose
str() is one line naming the path and the fix. The run folder itself is the anchor and may be reached
through links (a runs root on another disk). No JAX here: the dashboard imports this module.
"""

from __future__ import annotations

import contextlib
import errno
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from runstore.safe_files import LINK_REFUSED, UnsafePath, regular_fd

NOT_A_FOLDER = "is not a folder (a file, FIFO or device is in its place); remove it so jaxdash can make the folder"
NOT_REGULAR = "is not a regular file (a FIFO, device, socket or folder); jaxdash writes only regular files: remove it"
OUT_OF_FOLDER = "leads out of {root} ('..', or an absolute path); jaxdash writes only inside the run folder"
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def parts_of(root: str | os.PathLike, path: str | os.PathLike) -> list[str]:
    """The components of `path` below `root` (`path` absolute under `root`, or relative to it); raises UnsafePath
    for a path that is not below `root` or climbs ('..')."""
    rel = os.fspath(path)
    if os.path.isabs(rel):
        rel = os.path.relpath(os.path.abspath(rel), os.path.abspath(root))
    parts = [p for p in PurePosixPath(rel.replace(os.sep, "/")).parts if p not in ("", ".")]
    if not parts or ".." in parts or PurePosixPath(rel).is_absolute():
        raise UnsafePath(errno.EXDEV, OUT_OF_FOLDER.format(root=root), str(Path(root) / rel))
    return parts


def _refusal(parent: int, name: str, shown: Path, folder: bool) -> UnsafePath:
    """Why `name` (in the folder open as `parent`) cannot be used: a link (naming its target) or another kind."""
    try:
        target = os.readlink(name, dir_fd=parent)
    except OSError:
        return UnsafePath(errno.ENOTDIR if folder else errno.EINVAL, NOT_A_FOLDER if folder else NOT_REGULAR,
                          str(shown))  # fmt: skip
    return UnsafePath(errno.ELOOP, LINK_REFUSED.format(target=target), str(shown))


@contextlib.contextmanager
def folder(root: str | os.PathLike, parts: Sequence[str], create: bool = True) -> Iterator[int]:
    """A descriptor of the folder root/parts[0]/..., each component opened without following a link and made
    (through its parent's descriptor) when missing and `create`; closed on exit.

    Raises:
      UnsafePath: a component is a link or not a folder (nothing is created past it).
      FileNotFoundError: a component is missing and not `create`, or the run folder itself is gone.
    """
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)  # the run folder: the anchor
    shown = Path(root)
    try:
        for name in parts:
            shown = shown / name
            try:
                child = os.open(name, _DIR, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                with contextlib.suppress(FileExistsError):  # made meanwhile by another writer: opened below
                    os.mkdir(name, 0o755, dir_fd=fd)
                child = _open_dir(fd, name, shown)
            except OSError as exc:
                if exc.errno not in (errno.ENOTDIR, errno.ELOOP):
                    raise
                raise _refusal(fd, name, shown, folder=True) from None
            os.close(fd)
            fd = child
        yield fd
    finally:
        os.close(fd)


def _open_dir(parent: int, name: str, shown: Path) -> int:
    try:
        return os.open(name, _DIR, dir_fd=parent)
    except OSError as exc:
        if exc.errno in (errno.ENOTDIR, errno.ELOOP):
            raise _refusal(parent, name, shown, folder=True) from None
        raise


def make_folder(root: str | os.PathLike, path: str | os.PathLike) -> Path:
    """Make root/path (every component a real folder of the run); returns it. Raises UnsafePath as `folder`."""
    parts = parts_of(root, path)
    with folder(root, parts):
        return Path(root).joinpath(*parts)


def _temp(name: str) -> str:
    """The hidden temp name a replace of `name` goes through (listings and readers skip it)."""
    return f".{name}.{os.getpid()}.{threading.get_ident()}.tmp"


def replace(root: str | os.PathLike, path: str | os.PathLike, write: Callable[[BinaryIO], None] | bytes,
            fsync: bool = True) -> Path:  # fmt: skip
    """Write root/path atomically: `write(file)` (or the bytes) into a temp file beside it, then a rename over the
    name (a link or FIFO planted there is replaced, never written through). Missing folders are made.

    Raises:
      UnsafePath: a folder on the way is a link or not a folder; OSError naming the path (e.g. a full disk),
        with no temp file left behind.
    """
    parts = parts_of(root, path)
    shown, name, tmp = Path(root).joinpath(*parts), parts[-1], _temp(parts[-1])
    with folder(root, parts[:-1]) as parent:
        try:
            fd = _create(parent, tmp)
            with os.fdopen(fd, "wb") as out:
                out.write(write) if isinstance(write, bytes) else write(out)
                if fsync:
                    out.flush()
                    os.fsync(out.fileno())
            os.replace(tmp, name, src_dir_fd=parent, dst_dir_fd=parent)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=parent)
            if isinstance(exc, UnsafePath):
                raise
            raise OSError(exc.errno, exc.strerror, str(shown)) from exc
    return shown


def _create(parent: int, name: str) -> int:
    """A new file `name` in `parent`, whatever was there (a crash's leftover, a planted link) removed first."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        return os.open(name, flags, 0o644, dir_fd=parent)
    except FileExistsError:
        os.unlink(name, dir_fd=parent)  # a link itself, never its target
        return os.open(name, flags, 0o644, dir_fd=parent)


def _regular(parent: int, name: str, flags: int, shown: Path) -> int:
    """`name` in `parent` opened with `flags` | O_NOFOLLOW | O_NONBLOCK, if it is a regular file (then blocking)."""
    try:
        fd = os.open(name, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o644, dir_fd=parent)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENXIO, errno.EISDIR):  # a link; a FIFO without a reader; a folder
            raise _refusal(parent, name, shown, folder=False) from None
        raise OSError(exc.errno, exc.strerror, str(shown)) from exc
    return regular_fd(fd, shown, NOT_REGULAR)


def open_append(root: str | os.PathLike, path: str | os.PathLike) -> int:
    """A descriptor appending to root/path (made if missing, 0644; its folders too): a regular file reached
    without following a link, opened without blocking. The caller closes it.

    Raises:
      UnsafePath: a link, FIFO or other non-regular file on the way or at the name (one line, naming it).
    """
    parts = parts_of(root, path)
    with folder(root, parts[:-1]) as parent:
        return _regular(parent, parts[-1], os.O_WRONLY | os.O_APPEND | os.O_CREAT, Path(root).joinpath(*parts))


def append(root: str | os.PathLike, path: str | os.PathLike, data: bytes, fsync: bool = False) -> Path:
    """Append `data` to root/path (`open_append`); a failed write leaves no part of `data` behind.

    Raises:
      UnsafePath: as `open_append`; OSError naming the path (e.g. a full disk).
    """
    shown = Path(root).joinpath(*parts_of(root, path))
    fd = open_append(root, path)
    size = os.fstat(fd).st_size
    try:
        view = memoryview(data)
        while view:  # unbuffered: nothing is left in a buffer to land after a failure
            view = view[os.write(fd, view) :]
        if fsync:
            os.fsync(fd)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.ftruncate(fd, size)  # never keep a half-written line
        raise OSError(exc.errno, exc.strerror, str(shown)) from exc
    finally:
        os.close(fd)
    return shown


def overwrite(root: str | os.PathLike, path: str | os.PathLike, data: bytes) -> None:
    """Overwrite the existing regular file root/path in place (not atomic: the fallback when a full disk refuses
    a temp file, as the old file's own blocks still fit a small new text). Raises UnsafePath or OSError."""
    parts = parts_of(root, path)
    shown = Path(root).joinpath(*parts)
    with folder(root, parts[:-1], create=False) as parent:
        fd = _regular(parent, parts[-1], os.O_WRONLY, shown)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.truncate()
            out.flush()
            os.fsync(out.fileno())
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, str(shown)) from exc


def rename(root: str | os.PathLike, path: str | os.PathLike, new_name: str) -> None:
    """Rename the file root/path to `new_name` in the same folder (a rotated log), replacing what was there: a
    link at either name is moved or replaced itself, never followed. Nothing when root/path is missing.

    Raises:
      UnsafePath: a folder on the way is a link or not a folder; OSError naming the path.
    """
    parts = parts_of(root, path)
    parts_of(root, new_name)  # a plain name: never '..' or a path of its own
    if "/" in new_name or os.sep in new_name:
        raise UnsafePath(errno.EXDEV, OUT_OF_FOLDER.format(root=root), str(Path(root) / new_name))
    with folder(root, parts[:-1], create=False) as parent:
        try:
            os.replace(parts[-1], new_name, src_dir_fd=parent, dst_dir_fd=parent)
        except FileNotFoundError:
            return
        except OSError as exc:
            raise OSError(exc.errno, exc.strerror, str(Path(root).joinpath(*parts))) from exc


def names(root: str | os.PathLike, path: str | os.PathLike) -> list[str]:
    """The names in the folder root/path ([] when it is missing, a link or not a folder)."""
    try:
        with folder(root, parts_of(root, path), create=False) as fd:
            return os.listdir(fd)
    except OSError:
        return []


def remove(root: str | os.PathLike, path: str | os.PathLike) -> None:
    """Remove the file root/path (a link itself, never its target); nothing when it or a folder on the way is
    missing, a link or not a folder."""
    parts = parts_of(root, path)
    with contextlib.suppress(OSError), folder(root, parts[:-1], create=False) as parent:
        os.unlink(parts[-1], dir_fd=parent)
