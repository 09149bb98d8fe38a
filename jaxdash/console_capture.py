"""A client run's console, as W&B's default (`console="wrap"`) keeps it: the script's stdout and stderr teed
into the run folder's output.log (`runstore.run_output`: bounded, rotated) and the W&B copy's Logs.

`sys.stdout.write` and `sys.stderr.write` are wrapped on their stream objects, as W&B's wrap does: every
write still goes where it went (a terminal, a pipe, a file: no tty needed) and is then kept in memory; a
thread appends what was kept to output.log every FLUSH_S and hands it to the W&B copy's writer process
(`jaxdash.sink`), which writes it as W&B's own output records. A script's write costs a lock and an append;
at most MAX_PENDING characters wait (more is counted and said in the log). Off with
`settings=wandb.Settings(console="off")`, $JAXDASH_CONSOLE=off or W&B's $WANDB_CONSOLE=off.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from jaxdash.init_settings import explicit
from runstore.run_output import OutputLog

logger = logging.getLogger("jaxdash")
FLUSH_S = 0.5  # output.log (and the W&B copy) get the script's output this often
MAX_PENDING = 8 << 20  # characters waiting for the thread; more is dropped (counted) rather than grow memory
Chunk = tuple[str, str, float]  # ("stdout" | "stderr", text, time.time() it was written)


def enabled(settings: Any) -> bool:
    """Whether the run captures its console: W&B's `console` setting, else $JAXDASH_CONSOLE, else $WANDB_CONSOLE;
    "off" turns it off, any other value (wrap, auto, redirect) leaves it on, as W&B's default."""
    for value in (explicit(settings, "console"), os.environ.get("JAXDASH_CONSOLE"), os.environ.get("WANDB_CONSOLE")):
        if value is not None and str(value).strip():
            return str(value).strip().lower() != "off"
    return True


class ConsoleCapture:
    """Tees sys.stdout and sys.stderr into `run_dir`'s output.log and `relay` (the W&B copy), until `close`."""

    def __init__(self, run_dir: Path, relay: Callable[[list[Chunk]], None] | None = None) -> None:
        self._log, self._relay = OutputLog(run_dir), relay
        self._pending: list[Chunk] = []
        self._size = self._dropped = 0
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._closed = self._log_failed = False
        self._open_line: str | None = None  # the stream whose last line has no newline yet
        self._pid = os.getpid()  # a forked child (a data loader) inherits the wrap, not the thread: it keeps nothing
        self._wrapped: list[tuple[Any, bool, Callable[[str], int], Callable[[str], int]]] = []
        self._thread = threading.Thread(target=self._loop, name="jaxdash-console", daemon=True)

    def start(self) -> ConsoleCapture:
        """Wrap the streams' `write` and start the thread; a stream that cannot be wrapped is left as it is."""
        for name in ("stdout", "stderr"):
            stream = getattr(sys, name, None)
            if stream is None:
                continue
            try:
                own = "write" in vars(stream)
                original = stream.write
                stream.write = self._tee(name, original)
            except (AttributeError, TypeError):  # a stream object without a __dict__ of its own
                logger.warning("jaxdash: sys.%s cannot be captured (%s); its output is not kept", name, type(stream))
                continue
            self._wrapped.append((stream, own, original, stream.write))
        self._thread.start()
        return self

    def _tee(self, name: str, original: Callable[[str], int]) -> Callable[[str], int]:
        def write(data: str) -> int:
            written = original(data)  # the script's own output first, whatever happens to the copy
            self._take(name, data)
            return written

        return write

    def _take(self, name: str, data: Any) -> None:
        if self._closed or not isinstance(data, str) or not data or os.getpid() != self._pid:
            return
        with self._lock:
            if self._size > MAX_PENDING:
                self._dropped += len(data)
                return
            self._pending.append((name, data, time.time()))
            self._size += len(data)

    def _loop(self) -> None:
        while not self._done.wait(FLUSH_S):
            self._drain()

    def _drain(self) -> None:
        """What was written since the last call: appended to output.log, then handed to the W&B copy."""
        with self._lock:
            chunks, self._pending, self._size = self._pending, [], 0
            dropped, self._dropped = self._dropped, 0
        if dropped:
            chunks.append(("stderr", f"[jaxdash: {dropped} characters of output were not kept: written faster "
                                     f"than output.log took them]\n", time.time()))  # fmt: skip
        if not chunks:
            return
        if not self._log_failed:
            try:
                self._log.append(self._text(chunks))
            except OSError as exc:  # a full disk, a planted link: the script's own output is untouched
                self._log_failed = True
                logger.warning("jaxdash: the run's console output is not kept in its folder (%s)", exc)
        if self._relay is not None:
            try:
                self._relay(_joined(chunks))
            except Exception as exc:  # noqa: BLE001 - the W&B copy is best-effort
                logger.debug("jaxdash: console output not handed to the W&B copy (%s)", exc)

    def _text(self, chunks: list[Chunk]) -> str:
        """The chunks as output.log keeps them: a line one stream left open ends where the other stream writes
        (as wandb-core writes its output.log), so a traceback never starts mid-line."""
        parts = []
        for name, text, _ in chunks:
            if self._open_line is not None and self._open_line != name:
                parts.append("\n")
            parts.append(text)
            self._open_line = None if text.endswith("\n") else name
        return "".join(parts)

    def close(self) -> None:
        """Give the streams back their own `write` (where nothing wrapped them since) and keep what is left."""
        if self._closed:
            return
        for stream, own, original, ours in self._wrapped:
            with contextlib.suppress(AttributeError, TypeError):
                if vars(stream).get("write") is ours:
                    if own:
                        stream.write = original
                    else:
                        del stream.write  # the class's own method again
        self._closed = True
        self._done.set()
        if self._thread.is_alive():
            self._thread.join(timeout=10)
        self._drain()


def _joined(chunks: list[Chunk]) -> list[Chunk]:
    """Consecutive writes to one stream as one chunk (the first one's time): fewer W&B records, the same text."""
    out: list[Chunk] = []
    for name, text, at in chunks:
        if out and out[-1][0] == name:
            out[-1] = (name, out[-1][1] + text, out[-1][2])
        else:
            out.append((name, text, at))
    return out
