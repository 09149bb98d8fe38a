"""Record the end of the current run however the script ends, before anything it needs shuts down.

* A script that never calls `finish()` (most W&B scripts): finished at interpreter exit, from a
  `threading` exit hook, which runs before `atexit` (so before W&B's own atexit) and before the
  thread pools refuse new work ("cannot schedule new futures after interpreter shutdown" lost
  every row still queued). `sys.exit(n)` with n != 0 reads failed, as in W&B.
* An uncaught exception: Python's own traceback first (so the run's console output keeps it, as W&B's
  does), then failed, its last line as the message.
* SIGTERM (a scheduler, `kill`): stopped, every row logged kept; the process then exits with 143.
  Installed only where the script left SIGTERM at its default.
"""

from __future__ import annotations

import atexit
import os
import signal
import sys
import threading
from collections.abc import Callable
from typing import Any

from jaxdash.notices import one_line

_installed = False
_exit_code: list[int] = [0]


def install(live: Callable[[], list[Any]]) -> None:
    """Hook the script's end (once per process) for every run `live()` returns then (unfinished ones)."""
    global _installed
    if _installed:
        return
    _installed = True
    owner = os.getpid()
    _hook_excepthook(live)
    _hook_sys_exit()
    _hook_sigterm(live)
    try:
        threading._register_atexit(lambda: _at_exit(live, owner))  # before atexit and the thread pools' shutdown
    except (AttributeError, RuntimeError):  # another Python, or already shutting down
        atexit.register(lambda: _at_exit(live, owner))


def _at_exit(live: Callable[[], list[Any]], owner: int) -> None:
    if os.getpid() != owner:
        return  # a forked child (multiprocessing runs these hooks as it ends): the run is its parent's
    for run in live():
        run._end(_exit_code[0], None)


def _hook_excepthook(live: Callable[[], list[Any]]) -> None:
    previous = sys.excepthook

    def on_uncaught(kind: type[BaseException], exc: BaseException, tb: Any) -> None:
        try:
            previous(kind, exc, tb)
        finally:
            for run in live():
                if isinstance(exc, KeyboardInterrupt):
                    run._stopped = True
                    run._end(0, None)
                else:
                    run._end(1, one_line(exc))

    sys.excepthook = on_uncaught


def _hook_sys_exit() -> None:
    """Remember `sys.exit`'s code (W&B's ExitHooks do the same): a non-zero exit fails the run."""
    original = sys.exit

    def exit(code: Any = None) -> None:  # noqa: A001 - replaces sys.exit
        _exit_code[0] = code if isinstance(code, int) else (0 if code is None else 1)
        original(code)

    sys.exit = exit


def _hook_sigterm(live: Callable[[], list[Any]]) -> None:
    if threading.current_thread() is not threading.main_thread():
        return
    try:
        if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
            return  # the script's own handler decides
    except (ValueError, OSError):
        return

    def on_sigterm(signum: int, frame: Any) -> None:
        for run in live():
            run._stopped = True
        _exit_code[0] = 0  # stopped, not failed
        signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a second SIGTERM ends the process at once
        raise SystemExit(128 + signum)  # unwinds the script; the exit hook then finishes the run

    signal.signal(signal.SIGTERM, on_sigterm)
