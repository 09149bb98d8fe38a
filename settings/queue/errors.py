"""What the run queue says when queue.db cannot be used: one line naming the file, what is wrong and what to do."""

from __future__ import annotations

from pathlib import Path

from runstore import safe_files


class QueueError(OSError):
    """queue.db cannot be used (damaged, read-only, locked, a link); str() is one line naming the file and the fix."""

    def __str__(self) -> str:
        return str(self.args[0])


DAMAGED_FIX = "move it away and the run queue starts a new one"
READ_ONLY_FIX = "make the runs root writable (or give another --runs-root)"


def describe(
    exc: BaseException, path: Path, wait_s: float, damaged_fix: str = DAMAGED_FIX, read_only_fix: str = READ_ONLY_FIX
) -> str:
    """One line for a SQLite or file error on `path` (the queue's database, or the record of spent nonces):
    what is wrong and what to do (`damaged_fix`, `read_only_fix`: the fixes that depend on the file)."""
    if isinstance(exc, safe_files.UnsafePath):
        return str(exc)
    text = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc).splitlines()[0] if str(exc) else ""
    text = text or type(exc).__name__
    if "locked" in text or "busy" in text:
        return f"{path}: locked by another process for over {wait_s:g} s ({text}); try again once it is done"
    if "not a database" in text or "malformed" in text or "corrupt" in text:
        return f"{path}: damaged ({text}); {damaged_fix}"
    if "readonly" in text or "read-only" in text or "unable to open" in text or isinstance(exc, PermissionError):
        # PermissionError: EACCES, or EPERM for an immutable file (chattr +i)
        return f"{path}: cannot be written ({text}); {read_only_fix}"
    return f"{path}: the run queue cannot be used ({text})"
