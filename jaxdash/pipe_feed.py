"""Messages for a child process's stdin that never stall the caller when the child reads nothing for a while.

The writer process (`jaxdash.sink`) runs at idle priority: when other processes keep every core busy (a second
training run, a build) it gets no CPU and reads nothing. A blocking write into its full pipe (64 KiB by default
on Linux) would hold the thread that logs, and so the training loop, until the process got a slice again, and a
stopped writer process would stop the script. So the pipe is made as large as the system lets a user make it (1 MiB by
default) and written without blocking; what does not fit waits in a queue that a thread of its own writes once
the child reads again, in order. That thread wakes only then; past MAX_QUEUED bytes waiting, `send` waits
(backpressure, not unbounded memory).
"""

from __future__ import annotations

import collections
import contextlib
import os
import select
import threading
from collections.abc import Callable
from typing import BinaryIO

MAX_QUEUED = 64 * 2**20  # bytes queued before `send` waits for the child to read
PIPE_BYTES = 2**20  # the pipe's size asked for (Linux's /proc/sys/fs/pipe-max-size for a user, by default)


class PipeFeed:
    """Writes messages to `pipe` in order without blocking the caller; `on_error` hears of a failed write once
    (the child ended), after which messages are dropped."""

    def __init__(self, pipe: BinaryIO, on_error: Callable[[Exception], None]) -> None:
        self._pipe, self._fd, self._on_error = pipe, pipe.fileno(), on_error
        with contextlib.suppress(AttributeError, OSError):  # F_SETPIPE_SZ is Linux's
            import fcntl

            fcntl.fcntl(self._fd, fcntl.F_SETPIPE_SZ, PIPE_BYTES)
        os.set_blocking(self._fd, False)
        self._waiting: collections.deque[memoryview] = collections.deque()  # not written yet, in order
        self._queued = 0  # bytes in `_waiting`
        self._closing = False
        self.failed = False
        self._error: Exception | None = None  # the failed write, until `on_error` heard of it
        self._changed = threading.Condition()
        self._thread = threading.Thread(target=self._loop, name="jaxdash-pipe", daemon=True)
        self._thread.start()

    def send(self, message: bytes) -> None:
        """Write `message` as far as the pipe takes it now, the rest by the thread; waits only while MAX_QUEUED
        bytes wait to be written."""
        with self._changed:
            while self._queued > MAX_QUEUED and not self.failed:
                self._changed.wait(0.1)
            if self.failed or self._closing:
                return
            rest = memoryview(message)
            if not self._waiting:  # nothing before it: straight into the pipe
                rest = self._write(rest)
            if rest:
                self._waiting.append(rest)
                self._queued += len(rest)
                self._changed.notify_all()
        self._tell_error()

    def close(self, timeout: float | None = None) -> bool:
        """Write what is queued, then close the pipe (the child reads its end); whether that finished within
        `timeout` (if not, the thread goes on writing while the child reads)."""
        with self._changed:
            self._closing = True
            self._changed.notify_all()
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def _write(self, data: memoryview) -> memoryview:
        """Write what the pipe takes of `data` now; the rest (empty once the child ended: nothing more is written).
        Hold `_changed`."""
        try:
            return data[os.write(self._fd, data) :]
        except BlockingIOError:
            return data
        except (OSError, ValueError) as exc:
            self.failed, self._error, self._queued = True, exc, 0
            self._waiting.clear()
            self._changed.notify_all()
            return data[:0]

    def _tell_error(self) -> None:
        """`on_error` with a write's failure, once, outside the lock."""
        with self._changed:
            error, self._error = self._error, None
        if error is not None:
            self._on_error(error)

    def _loop(self) -> None:
        """Write the queue as the child reads it; close the pipe once closing and all is written."""
        while True:
            with self._changed:
                while not self._waiting and not self._closing:
                    self._changed.wait()
                if not self._waiting or self.failed:
                    break
            with contextlib.suppress(OSError, ValueError):
                select.select([], [self._fd], [], 1.0)  # until the child reads (the timeout: a closed pipe)
            with self._changed:
                if not self._waiting:  # the child ended meanwhile
                    continue
                head = self._waiting.popleft()
                rest = self._write(head)
                if not self.failed:
                    self._queued -= len(head) - len(rest)
                    if rest:
                        self._waiting.appendleft(rest)
                    self._changed.notify_all()
            self._tell_error()
        with contextlib.suppress(OSError, ValueError):
            self._pipe.close()
