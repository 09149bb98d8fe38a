"""Logged values leave the device in batches, never waited for: what keeps `run.log` free.

`wandb.log({"loss": loss})` of a JAX array waits for the array (it converts it to a float at once),
so a per-step jitted loop waits for every step to finish before it can dispatch the next: the
device idles while Python logs. Here `log` only queues the (still computing) arrays; every BATCH_S the
steps whose arrays are computed are read to the host (`jaxdash.host_values`) and handed on as blocks of
columns to `jaxdash.rows_out` (the run's writers), never back to the client (`Fetcher`).
"""

from __future__ import annotations

import collections
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from jaxdash.host_values import Later, fetch, read_ready
from jaxdash.row_parts import Entry, Part, Split

log = logging.getLogger("jaxdash")

BATCH_S = 0.05  # how often read values are written (the page refreshes every 0.5 s)
READS_PER_PUT = 4  # computed steps a `put` reads at most (a loop logging every step has ~1 a put)
MAX_PENDING = 100_000  # steps queued before `log` waits for this thread (backpressure, not unbounded memory)
# A queued step is its values' dict alone, its step (and a chunk's steps) kept under these keys: one object the
# garbage collector tracks a step besides the arrays, few enough that queued steps set off no collection.
_STEP, _STEPS = object(), object()


class Fetcher:
    """Takes queued steps off the device and writes them through `write` (a client run's
    `jaxdash.rows_out.RowsOut.write`), never waiting for a step still computing.

    While a script logs, the thread that logs does it, in slices too small to stall the loop: each `put` reads
    the few queued steps already computed (READS_PER_PUT, ~1-3 us each, while the device computes the step
    just dispatched), and a `put` at least BATCH_S after the last batch writes what was read. Another thread
    doing that work would take the GIL from the training thread and hand it back at every wake, read and free,
    each hand-over a stall of the loop, which cost more than the work itself (`benchmarks.fetch_gil`). The
    background thread takes over when the script stops logging (an evaluation, a pause, the end): it wakes
    every BATCH_S and writes what has waited 2 * BATCH_S. A batch of ~200 steps keeps the garbage collector's
    count of new objects under the threshold of a collection (a queued step is one dict and its arrays), which
    a loop logging nothing never sets off either.

    The queue is a deque: `append` and `popleft` are atomic under the GIL, so `put` never waits for a lock
    another thread holds (`_batch` is tried, not waited for); one batch is written at a time, in the order the
    steps came.
    """

    def __init__(self, write: Callable[[list[Part]], None], clock: Callable[[], float] = time.monotonic) -> None:
        self.pending: collections.deque[dict[Any, Any]] = collections.deque()  # values, with _STEP (and _STEPS)
        self.write = write
        self.clock = clock
        self.warned: set[str] = set()
        self.split = Split(self._warn_once)
        self.error: BaseException | None = None  # the last failed write (logging went on)
        self.errors = 0
        self.queued = self.written = 0  # entries put / written (or dropped): what `sync` waits for
        self.closing = threading.Event()
        self._batch = threading.Lock()  # held while steps are read or written
        self._rows: list[Any] = []  # steps taken off `pending`, not written yet: values on the host, or `Later`
        self._batched_at = clock()
        self.thread = threading.Thread(target=self._loop, name="jaxdash-fetch", daemon=True)
        self.thread.start()

    def _warn_once(self, key: str, message: str) -> None:
        if key not in self.warned:
            self.warned.add(key)
            log.warning(message)

    def put(self, step: int, values: dict[str, Any], steps: int = 0) -> None:
        """Queue one step's values, or with `steps` a chunk's (arrays with a leading axis of `steps`); read a few
        computed ones, and every BATCH_S write them. Waits only while MAX_PENDING entries wait."""
        while len(self.pending) >= MAX_PENDING and self.thread.is_alive():
            time.sleep(BATCH_S / 10)
        values[_STEP] = step
        if steps:
            values[_STEPS] = steps
        self.pending.append(values)
        self.queued += 1
        if self._batch.acquire(blocking=False):
            try:
                read_ready(self.pending, self._rows, READS_PER_PUT)
                if self.clock() - self._batched_at >= BATCH_S:
                    self._write_read()
            finally:
                self._batch.release()

    def sync(self, timeout: float = 30.0) -> None:
        """Wait until every entry queued so far is written (a read of the run's summary, as W&B's, is current)."""
        target, deadline = self.queued, time.monotonic() + timeout
        while self.written < target and self.thread.is_alive() and time.monotonic() < deadline:
            time.sleep(BATCH_S / 10)

    def close(self, timeout: float | None = None) -> None:
        """Fetch and write everything queued, then end the thread."""
        self.closing.set()
        self.thread.join(timeout)

    def _loop(self) -> None:
        done = False
        while not done:
            done = self.closing.wait(BATCH_S)
            if done or self.clock() - self._batched_at >= 2 * BATCH_S:  # the script logs no more (for now)
                with self._batch:
                    read_ready(self.pending, self._rows)
                    if done:  # the rest, still computing: `fetch` waits for them
                        while self.pending:
                            self._rows.append(Later(self.pending.popleft()))
                    if not self._write_read():
                        self._write_batch([])  # nothing new: the writers flush what they held back

    def _write_read(self) -> bool:
        """Write the steps read so far (hold `_batch`); whether there were any."""
        self._batched_at = self.clock()
        rows, self._rows = self._rows, []
        if rows:
            self._write_batch(rows)
            self.written += len(rows)
        return bool(rows)

    def _write_batch(self, rows: list[Any]) -> None:
        """Split and write one batch of rows (values on the host; `Later` entries read here, with one wait); a bad
        value costs its own step (one warning), a failed write this batch (counted in `errors`, the last in
        `error`), never the logging after it."""
        later = [i for i, row in enumerate(rows) if type(row) is Later]
        if later:
            self._read_later(rows, later)
        entries = [_entry(row) for row in rows if row is not None]
        try:
            parts = self.split(entries)
        except Exception:  # noqa: BLE001 - one bad value: step by step, that step dropped
            parts = []
            for entry in entries:
                try:
                    parts += self.split([entry])
                except Exception as exc:  # noqa: BLE001 - the training loop must never die of logging
                    self._warn_once(f"!{type(exc).__name__}", f"jaxdash: step {entry[0]}: {_one_line(exc)}; not logged")
        try:
            self.write(parts)
        except Exception as exc:  # noqa: BLE001 - the training loop must never die of logging
            self.error, self.errors = exc, self.errors + 1
            self._warn_once(
                f"!write {type(exc).__name__}", f"jaxdash: a write failed: {_one_line(exc)}; logging goes on"
            )

    def _read_later(self, rows: list[Any], later: list[int]) -> None:
        """Replace the `Later` rows at `later` by their values on the host (None, one warning, for one that
        cannot be read, e.g. a deleted array)."""
        try:
            for i, values in zip(later, fetch([rows[i].values for i in later]), strict=True):
                rows[i] = values
        except Exception:  # noqa: BLE001 - one by one: the one that fails is dropped
            for i in later:
                try:
                    rows[i] = fetch([rows[i].values])[0]
                except Exception as exc:  # noqa: BLE001 - the training loop must never die of logging
                    step = rows[i].values.get(_STEP)
                    self._warn_once(f"!{type(exc).__name__}", f"jaxdash: step {step}: {_one_line(exc)}; not logged")
                    rows[i] = None


def _entry(row: dict[Any, Any]) -> Entry:
    """(step, values, steps) of a step's row on the host (a dict of its own: the queued one keeps its step)."""
    return row.pop(_STEP), row, row.pop(_STEPS, 0)


def _one_line(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
