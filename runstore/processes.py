"""Which process a run's status.json names, and whether it is really that run's training process.

Stop and delete act only on what they own: a pid is signalled only if it is alive, on this host, and
verifiably the run's own process (its command line and start time), never a reused pid.
"""

from __future__ import annotations

import math
import os
import socket
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from runstore.run_checks import number_or_none


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
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return True


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
