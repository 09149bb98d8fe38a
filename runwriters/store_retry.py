"""A run store whose failed writes (a full disk) are kept and retried: the client's, whose logging must not end.

`RetryingRecordFile` wraps the `RecordFile` a `runwriters.store.RunStoreWriter` writes through:
`RunStoreWriter(run_dir, files=RetryingRecordFile(RecordFile(run_dir)))`. The plain file raises a failed
append, which would end a client's logging for good (a full disk that freed up again kept 9,999 of 60,000
records). Here a failed append keeps its lines in memory (at most MAX_BACKLOG_BYTES; beyond that the
oldest are dropped and counted) and every later flush tries again, at most every RETRY_S, the whole
backlog first so the file stays in step order; progress fields wait until the lines are written again.
When a write lands again the gap is recorded in status.json "events" (kind "write_gap": from, to, the
error, records delayed and lost). At close the backlog is retried for up to $JAXDASH_WRITE_RETRY_S
seconds (default 30), unless the write was refused (metrics.jsonl is a planted link or FIFO:
`runstore.nofollow`), which waiting does not mend.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from runstore.env_numbers import env_number_or_default
from runstore.run_folder import RunFolder
from runstore.safe_files import UnsafePath
from runwriters.store import RecordFile

log = logging.getLogger("jaxdash")
RETRY_S = 1.0
MAX_BACKLOG_BYTES = 256 << 20


def close_retry_s() -> float:
    """How long `close` keeps retrying a backlog: $JAXDASH_WRITE_RETRY_S, default 30 s."""
    return env_number_or_default("JAXDASH_WRITE_RETRY_S", 30.0, minimum=0)


class RetryingRecordFile:
    """A `RecordFile` whose metrics.jsonl and progress writes are retried instead of raised (called from one
    thread, `runwriters.async_writer.BackgroundWrites`', so it keeps no lock)."""

    def __init__(self, inner: RecordFile) -> None:
        self.inner = inner
        self.run_dir = inner.run_dir
        self._backlog: list[str] = []  # metrics.jsonl lines not written yet, in order
        self._backlog_bytes = 0
        self._records = 0  # records in the backlog
        self._lost = 0  # records dropped from a backlog past MAX_BACKLOG_BYTES
        self._failing: tuple[float, str] | None = None  # (since, error) while writes fail
        self._tried = 0.0
        self._refused = False  # the failing write was refused (runstore.nofollow), not a full disk

    def append(self, lines: str) -> None:
        """Queue `lines` after any waiting ones and write them all, unless a write failed less than RETRY_S ago."""
        if lines:
            self._backlog.append(lines)
            self._backlog_bytes += len(lines)
            self._records += lines.count("\n")
        self._trim()
        if self._failing is not None and time.monotonic() - self._tried < RETRY_S:
            return  # still failing a moment ago: retry at most every RETRY_S
        self._try_backlog()

    def write_progress(self, fields: dict[str, Any]) -> None:
        """The progress fields into status.json while the lines are written; skipped (the next flush brings newer
        ones) while they fail or when this write fails."""
        if self._failing is None:
            try:
                self.inner.write_progress(fields)
            except OSError:
                pass  # progress only: the next flush writes it again

    def _try_backlog(self) -> bool:
        if not self._backlog:
            return True
        self._tried = time.monotonic()
        try:
            self.inner.append("".join(self._backlog))
        except OSError as exc:
            if self._failing is None:
                refused = isinstance(exc, UnsafePath)  # a planted link or FIFO: its line names it and the fix
                self._failing = (time.time(), str(exc) if refused else f"{exc.strerror or type(exc).__name__} "
                                                                        f"writing {exc.filename}")  # fmt: skip
                self._refused = refused
                log.warning("jaxdash: %s; logged records wait in memory and are written when it works again",
                            self._failing[1])  # fmt: skip
            return False
        delayed, self._backlog, self._backlog_bytes, self._records = self._records, [], 0, 0
        if self._failing is not None:
            self._record_gap(delayed)
        return True

    def _record_gap(self, delayed: int) -> None:
        since, error = self._failing or (time.time(), "")
        self._failing = None
        took = time.time() - since
        lost = f"; {self._lost} records were dropped (more than memory keeps)" if self._lost else ""
        message = f"{error} for {took:.0f} s; {delayed} records waited and were written when it worked again{lost}"
        log.warning("jaxdash: %s", message)
        try:
            RunFolder(self.run_dir).add_event("write_gap", message, started=since, ended=time.time(),
                                                delayed=delayed, lost=self._lost)  # fmt: skip
        except OSError:
            pass
        self._lost = 0

    def _trim(self) -> None:
        """Drop the oldest waiting lines beyond MAX_BACKLOG_BYTES (counted, recorded with the gap)."""
        while self._backlog_bytes > MAX_BACKLOG_BYTES and len(self._backlog) > 1:
            old = self._backlog.pop(0)
            self._backlog_bytes -= len(old)
            self._records -= old.count("\n")
            self._lost += old.count("\n")

    def close(self) -> None:
        """Retry what waits for up to `close_retry_s()` (the writer's thread is done); never raises for a failed
        write: what is still not written is one error line."""
        self.inner.close()
        deadline = time.monotonic() + (0.0 if self._refused else close_retry_s())  # waiting mends no planted link
        while self._backlog and time.monotonic() < deadline:
            time.sleep(min(RETRY_S, max(deadline - time.monotonic(), 0)))
            self._try_backlog()
        if self._backlog:
            log.error("jaxdash: %d logged records could not be written to %s", self._records, self.run_dir)
