"""The client's run-store writer: a failed write (a full disk) is kept and retried, never the end of logging.

`RunStoreWriter` writes metrics.jsonl once per flush on its writer thread and re-raises a failed
write, which ended a client's logging for good (a full disk that freed up again kept 9,999 of 60,000
records). Here a failed append keeps its lines in memory (at most MAX_BACKLOG_BYTES; beyond that the
oldest are dropped and counted) and every later flush tries again, at most every RETRY_S, the whole
backlog first so the file stays in step order. When a write lands again the gap is recorded in
status.json "events" (kind "write_gap": from, to, the error, records delayed and lost). At close the
backlog is retried for up to $JAXDASH_WRITE_RETRY_S seconds (default 30), unless the write was refused
(metrics.jsonl is a planted link or FIFO: `runstore.nofollow`), which waiting does not mend.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

from runstore import atomic, run_store
from runstore.env_numbers import env_number_or_default
from runstore.safe_files import UnsafePath
from runwriters.store import RunStoreWriter

log = logging.getLogger("jaxdash")
RETRY_S = 1.0
MAX_BACKLOG_BYTES = 256 << 20


def close_retry_s() -> float:
    """How long `close` keeps retrying a backlog: $JAXDASH_WRITE_RETRY_S, default 30 s."""
    return env_number_or_default("JAXDASH_WRITE_RETRY_S", 30.0, minimum=0)


class RetryingStoreWriter(RunStoreWriter):
    """A `RunStoreWriter` whose metrics.jsonl and progress writes are retried instead of raised."""

    def __init__(self, run_dir: str | Path) -> None:
        super().__init__(run_dir)
        self._backlog: list[str] = []  # metrics.jsonl lines not written yet, in order
        self._backlog_bytes = 0
        self._records = 0  # records in the backlog
        self._lost = 0  # records dropped from a backlog past MAX_BACKLOG_BYTES
        self._failing: tuple[float, str] | None = None  # (since, error) while writes fail
        self._tried = 0.0
        self._refused = False  # the failing write was refused (runstore.nofollow), not a full disk

    @property
    def pending(self) -> int:
        """Records logged but not yet on disk because writes failed."""
        return self._records

    def _append(self, text: str, fields: dict[str, Any] | None) -> None:
        if text:
            self._backlog.append(text)
            self._backlog_bytes += len(text)
            self._records += text.count("\n")
        self._trim()
        if self._failing is not None and time.monotonic() - self._tried < RETRY_S:
            return  # still failing a moment ago: retry at most every RETRY_S
        self._try_backlog()
        if fields and self._failing is None:
            try:
                run_store.write_status(self.run_dir, **fields)
            except OSError:
                pass  # progress only: the next flush writes it again

    def _try_backlog(self) -> bool:
        if not self._backlog:
            return True
        self._tried = time.monotonic()
        try:
            atomic.append_metric_lines(self.run_dir, "".join(self._backlog))
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
            run_store.add_event(self.run_dir, "write_gap", message, started=since, ended=time.time(),
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

    def close(self, state: str = "finished", message: str | None = None) -> None:
        """Write what is left, retrying a backlog for up to `close_retry_s()`; never raises for a failed write."""
        super().close(state, message)
        deadline = time.monotonic() + (0.0 if self._refused else close_retry_s())  # waiting mends no planted link
        while self._backlog and time.monotonic() < deadline:
            time.sleep(min(RETRY_S, max(deadline - time.monotonic(), 0)))
            self._try_backlog()
        if self._backlog:
            log.error("jaxdash: %d logged records could not be written to %s", self._records, self.run_dir)

    def write_summary(self, metrics: Any) -> None:  # noqa: D102 - the client writes its summary itself
        pass
