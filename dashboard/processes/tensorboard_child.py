"""Run TensorBoard for as long as the process that started it lives.

`python tensorboard_child.py PARENT_PID ARGS...` runs `tensorboard ARGS...` in this process and
ends it when PARENT_PID is gone, however the dashboard ended: SIGTERM (uvicorn may be killed
before `atexit` runs), kill -9 or a crash. Run by path, with no import from this repository.

TensorBoard reads event files with its own reader, which allocates whatever length a record header
claims: a crafted 4 KB file claiming 1.9 GB grew it (and its Rust data server) to 1.9 GB here. So
the address space of each of its two processes is capped (JAXDASH_TENSORBOARD_MEMORY bytes, default
1 GiB, 0 = no cap; the data server inherits the cap): such a file makes TensorBoard fail to read it,
never take the machine. A claim is refused when it does not fit beside what the process has mapped,
so that must be small and the same on every start: glibc maps up to 64 MB more for each thread that
finds the allocator busy (the data server mapped 93-489 MB before reading a byte, by chance), and
tensorboard_server.py starts this process with MALLOC_ARENA_MAX=2 (93 MB; TensorBoard's own 329 MB).
The dashboard's own reader has its own bounds (runstore/event_files.py).

$JAXDASH_TENSORBOARD_PREFIX, when set, is TensorBoard's `--path_prefix`: the unguessable path it serves
under (tensorboard_server.py), passed in the environment so that `ps` does not show it.
"""

from __future__ import annotations

import os
import resource
import signal
import sys
import threading
import time

POLL_S = 1.0  # how soon TensorBoard notices that the dashboard is gone
MEMORY_CAP = 1 << 30  # bytes of address space for TensorBoard, and for its data server (it inherits it)


def cap_memory() -> int:
    """Cap this process's address space (inherited by TensorBoard's data server); return the cap (0: none)."""
    try:
        cap = int(os.environ.get("JAXDASH_TENSORBOARD_MEMORY", MEMORY_CAP))
    except ValueError:
        cap = MEMORY_CAP
    if cap > 0:
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    return max(cap, 0)


def follow_parent(parent_pid: int) -> None:
    """Terminate this process once it is no longer `parent_pid`'s child (the parent exited)."""
    while os.getppid() == parent_pid:
        time.sleep(POLL_S)
    os.kill(os.getpid(), signal.SIGTERM)


def main() -> int:
    parent_pid = int(sys.argv[1])
    cap_memory()
    sys.path.pop(0)  # this folder is not a place to import TensorBoard's modules from
    threading.Thread(target=follow_parent, args=(parent_pid,), daemon=True).start()
    from tensorboard.main import run_main

    prefix = os.environ.pop("JAXDASH_TENSORBOARD_PREFIX", "")
    sys.argv = ["tensorboard", *sys.argv[2:], *(["--path_prefix", prefix] if prefix else [])]
    return run_main()


if __name__ == "__main__":
    sys.exit(main())
