"""Which process a run's status.json names, whether it is really that run's training process, and whether it stalled.

Stop and delete act only on what they own: a pid is signalled only if it is alive, on this host, and
verifiably the run's own process (its command line and start time), never a reused pid.
A training run rewrites status.json ("updated") every chunk; one that has not for STALL_S, or for
STOPPED_S while the kernel reports its process stopped (SIGSTOP, Ctrl-Z), is stalled since that
write (`stalled_since`, a pure function of status.json's times and now), and the page says so
instead of a rate and an ETA.
"""

from __future__ import annotations

import math
import os
import socket
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from runstore.run_checks import number_or_none

STALL_S = 20.0  # no status.json write for this long while training: stalled (hung I/O, swapped out, a deadlock)
STOPPED_S = 3.0  # the same for a process the kernel reports stopped: nothing can move until it is continued


def _proc_state(pid: int) -> str | None:
    """The state letter of /proc/<pid>/stat (R, S, D, T, t, Z...), or None where there is none to read."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


def pid_alive(pid: int | None) -> bool:
    """True if `pid` is a live (non-zombie) process on this host."""
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return _proc_state(pid) != "Z"


def pid_stopped(pid: Any) -> bool:
    """True if `pid` is a process on this host that the kernel holds stopped (SIGSTOP/SIGTSTP, or traced)."""
    return isinstance(pid, int) and not isinstance(pid, bool) and pid > 0 and _proc_state(pid) in ("T", "t")


def stalled_since(status: Mapping[str, Any], now: float, stopped: bool = False) -> float | None:
    """When a training run last made progress, if it has made none since for too long; else None.

    Pure: from status.json's state, phase and "updated" (its last write, once per chunk) and `now`.
    Too long is STALL_S, or STOPPED_S when its process is known to be `stopped` (`pid_stopped`).
    A phase other than training (loading data, compiling) writes nothing for a while and is not stalled.
    """
    updated = number_or_none(status.get("updated"))
    if status.get("state") != "running" or status.get("phase") not in (None, "training"):
        return None
    if updated is None or not math.isfinite(updated):
        return None
    return updated if now - updated > (STOPPED_S if stopped else STALL_S) else None


def with_stall(status: dict[str, Any], now: float) -> dict[str, Any]:
    """`status` with "stalled_since" (a unix time) when its run stalled (`stalled_since`), its own
    process on this host being looked at for a stop (SIGSTOP); `status` itself otherwise."""
    if status.get("state") != "running":
        return status
    since = stalled_since(status, now, stopped=held_stopped(status))
    return status if since is None else {**status, "stalled_since": since}


def held_stopped(status: Mapping[str, Any]) -> bool:
    """Whether a running run's own process, on this host, is held stopped by the kernel now (`pid_stopped`)."""
    local = status.get("host") in (None, socket.gethostname())
    return status.get("state") == "running" and local and pid_stopped(status.get("pid"))


START_SLACK_S = 5.0  # clock and bookkeeping slack between a process's start and the time a run records


def owns_process(status: Mapping[str, Any], run_dir: Path) -> bool:
    """True only if status["pid"] is verifiably this run's training process, alive on this host.

    Checked from what the run directory records now: the pid is alive (not a zombie) on this
    host ("host", when recorded); its command line runs `training`; it names the run directory
    or run id, or has a file inside the run directory open (a warm worker's process.log, event
    files); and it started no later than the run's recorded start ("started", or a page
    launch's "launched") plus a few seconds, so a pid reused by a newer process never matches.
    Anything that cannot be verified (another user's process, no /proc) is False.
    """
    pid, host = status.get("pid"), status.get("host")
    started = number_or_none(status.get("started", status.get("launched")))
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 1 or pid == os.getpid():
        return False
    if host is not None and host != socket.gethostname():
        return False
    if started is None or not math.isfinite(started) or not pid_alive(pid):
        return False
    import psutil  # only here: the training process never needs it

    run_dir = Path(run_dir).resolve()
    try:
        proc = psutil.Process(pid)
        if proc.create_time() > started + START_SLACK_S:
            return False  # a newer process got the pid
        cmdline = proc.cmdline()
        if not any("training" in arg for arg in cmdline):
            return False
        if any(str(run_dir) in arg or run_dir.name in arg for arg in cmdline):
            return True
        return any(Path(f.path).is_relative_to(run_dir) for f in proc.open_files())
    except (psutil.Error, OSError, ValueError):
        return False
