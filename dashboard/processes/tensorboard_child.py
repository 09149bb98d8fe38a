"""Run TensorBoard for as long as the process that started it lives.

`python tensorboard_child.py PARENT_PID ARGS...` runs `tensorboard ARGS...` in this process and
ends it when PARENT_PID is gone, however the dashboard ended: SIGTERM (uvicorn may be killed
before `atexit` runs), kill -9 or a crash. Run by path, with no import from this repository.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time

POLL_S = 1.0  # how soon TensorBoard notices that the dashboard is gone


def follow_parent(parent_pid: int) -> None:
    """Terminate this process once it is no longer `parent_pid`'s child (the parent exited)."""
    while os.getppid() == parent_pid:
        time.sleep(POLL_S)
    os.kill(os.getpid(), signal.SIGTERM)


def main() -> int:
    parent_pid = int(sys.argv[1])
    sys.path.pop(0)  # this folder is not a place to import TensorBoard's modules from
    threading.Thread(target=follow_parent, args=(parent_pid,), daemon=True).start()
    from tensorboard.main import run_main

    sys.argv = ["tensorboard", *sys.argv[2:]]
    return run_main()


if __name__ == "__main__":
    sys.exit(main())
