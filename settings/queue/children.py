"""Whether a queued job's process still runs, and its exit code: the queue's own children keep their Popen."""

from __future__ import annotations

import os
import subprocess

import psutil

# This process's own job processes, kept so a dropped Popen is never reaped by the next
# subprocess call (subprocess._cleanup) before dispatch reads its exit code.
_CHILDREN: dict[int, subprocess.Popen] = {}


def adopt(proc: subprocess.Popen) -> None:
    """Let dispatch read the exit code of a job process this process started by other means (the page's)."""
    _CHILDREN[proc.pid] = proc


def job_alive(pid: int) -> tuple[bool, int | None]:
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
