"""Logged values leave the device in batches, never waited for: what keeps `run.log` free.

`wandb.log({"loss": loss})` of a JAX array waits for the array (it converts it to a float at once),
so a per-step jitted loop waits for every step to finish before it can dispatch the next: the
device idles while Python logs. Here `log` only queues the (still computing) arrays: device scalars
stacked a window at a time (`jaxdash.stacking`), anything else step by step. Once computed they are
read to the host (`jaxdash.host_values`) and every WRITE_S handed on as blocks of columns to
`jaxdash.rows_out` (the run's writers), never back to the client (`Fetcher`).
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
from jaxdash.stacking import STACK, Window

log = logging.getLogger("jaxdash")

BATCH_S = 0.05  # the longest a window waits to be stacked; the fetch thread's wake while the script is quiet
WRITE_S = 0.05  # how often read values are written while the script logs: ~200 rows, ~0.2 ms of the loop's thread,
# where 0.25 s of rows at once is ~1 ms, a stall the loop pays in full (`benchmarks.loop_stalls`); the writers
# flush at most every `jaxdash.rows_out.FLUSH_S`
IDLE_S = 0.25  # the fetch thread's wake once nothing is left to write (a summary the script changes is written then)
MAX_PENDING = 100_000  # entries queued before `log` waits for this thread (backpressure, not unbounded memory)
# A queued step is its values' dict alone, its step (and a chunk's steps) kept under these keys: one object the
# garbage collector tracks a step besides the arrays, few enough that queued steps set off no collection.
_STEP, _STEPS = object(), object()


class Fetcher:
    """Takes queued steps off the device and writes them through `write` (a client run's
    `jaxdash.rows_out.RowsOut.write`), never waiting for a step still computing.

    While a script logs, the thread that logs does it, in slices too small to stall the loop: each `put` adds
    its step to the inbox, and every STACK steps the inbox goes to the window (`jaxdash.stacking`) or the queue in
    one loop (a call a step ran ~4x slower, its code cold between the training loop's own dispatches); a `put`
    BATCH_S after the last read reads the queued entries already computed, stacking the window first (one
    jitted call) if it was last stacked BATCH_S ago (a window filling faster is stacked once full rather than
    padded: a padded stack costs the loop as much as a full one); and one WRITE_S after the last write writes
    what was read. Another thread doing that work would take the GIL from the training thread and hand it back
    at every wake, read and free, each hand-over a stall of the loop, which cost more than the work itself
    (`benchmarks.fetch_gil`). The background thread takes over when the script stops logging (an evaluation, a
    pause, the end): once no step came for 2 * BATCH_S it stacks the window and writes what is computed.

    One lock (`_lock`) orders it all: `put` takes it at once unless the fetch thread is writing what a pause
    left; one batch is written at a time, in the order the steps came.
    """

    def __init__(self, write: Callable[[list[Part]], None], clock: Callable[[], float] = time.monotonic) -> None:
        self.inbox: collections.deque[tuple[int, dict[str, Any], int]] = collections.deque()  # put, not taken yet
        self.pending: collections.deque[dict[Any, Any]] = collections.deque()  # values, with _STEP (and _STEPS)
        self.write = write
        self.clock = clock
        self.warned: set[str] = set()
        self.split = Split(self._warn_once)
        self.error: BaseException | None = None  # the last failed write (logging went on)
        self.errors = 0
        self.queued = self.written = 0  # entries queued / written (or dropped): what `sync` waits for
        self.closing = threading.Event()
        self._lock = threading.Lock()  # held while the window, `pending` or the read steps change, and for a write
        self.window = Window()  # single steps of device scalars waiting to be stacked (`jaxdash.stacking`)
        self._rows: list[Any] = []  # steps taken off `pending`, not written yet: values on the host, or `Later`
        self._batched_at = self._put_at = self._read_at = clock()  # the last write, put and read of `pending`
        self._window_at = self._read_at  # the window's last stack: a read stacks it only once it is BATCH_S old
        self.thread = threading.Thread(target=self._loop, name="jaxdash-fetch", daemon=True)
        self.thread.start()

    def _warn_once(self, key: str, message: str) -> None:
        if key not in self.warned:
            self.warned.add(key)
            log.warning(message)

    def put(self, step: int, values: dict[str, Any], steps: int = 0) -> None:
        """Queue one step's values, or with `steps` a chunk's (arrays with a leading axis of `steps`). A step only
        joins the inbox; every STACK steps, every BATCH_S and at the first step after a pause the inbox goes to the
        window or the queue (`_take_inbox`), and what is computed is read; every WRITE_S it is written. Waits only
        while MAX_PENDING entries wait, or for the fetch thread's batch when the script logs again after a pause."""
        now = self.clock()
        inbox = self.inbox
        inbox.append((step, values, steps))
        if len(inbox) >= STACK or now - self._read_at >= BATCH_S or now - self._put_at >= 2 * BATCH_S:
            self._take_inbox(now)
        self._put_at = now

    def _take_inbox(self, now: float) -> None:
        """The inbox's steps onto the window or the queue; a read if one is due (BATCH_S after the last, or the
        first step after a pause: written at once if it can be), and a write WRITE_S after the last."""
        resumed = now - self._put_at >= 2 * BATCH_S
        while len(self.pending) >= MAX_PENDING and self.thread.is_alive():
            time.sleep(BATCH_S / 10)
        with self._lock:  # held by the fetch thread only while it writes what a pause left (a batch, ~1 ms)
            self._add_inbox()
            if resumed or now - self._read_at >= BATCH_S:  # however fast windows fill, a read every BATCH_S
                self._read_at = now
                if resumed or now - self._window_at >= BATCH_S:  # a window filling fast is stacked once full
                    self._take_window()
                read_ready(self.pending, self._rows)
                if resumed or now - self._batched_at >= WRITE_S:
                    self._write_read()

    def _add_inbox(self) -> None:
        """Each inbox step, in order, to the window (stacked once it holds STACK) or the queue; hold `_lock`."""
        inbox, window = self.inbox, self.window
        while inbox:
            step, values, steps = inbox.popleft()
            if steps or not window.add(step, values):
                self._queue(step, values, steps)
            elif len(window.steps) >= STACK:
                self._take_window()

    def _queue(self, step: int, values: dict[str, Any], steps: int) -> None:
        """Values the window did not take: after the window (a new one may start with them), else onto `pending`."""
        if self.window.steps:
            self._take_window()
            if not steps and self.window.add(step, values):
                return
        self._enqueue(step, values, steps)

    def _enqueue(self, step: int, values: dict[Any, Any], steps: int | tuple[int, ...]) -> None:
        """One entry onto `pending`, its step (and a chunk's or a window's steps) kept in it; hold `_lock`."""
        values[_STEP] = step
        if steps:
            values[_STEPS] = steps
        self.pending.append(values)
        self.queued += 1

    def _take_window(self) -> None:
        """The window's steps onto `pending` (`Window.take`: one entry of stacked arrays, or its steps one by one if
        they could not be stacked); hold `_lock`."""
        self._window_at = self.clock()
        for step, values, steps in self.window.take():
            self._enqueue(step, values, steps)

    def sync(self, timeout: float = 30.0) -> None:
        """Wait until every entry queued so far is written (a read of the run's summary, as W&B's, is current)."""
        with self._lock:
            self._add_inbox()
            self._take_window()
        target, deadline = self.queued, time.monotonic() + timeout
        while self.written < target and self.thread.is_alive() and time.monotonic() < deadline:
            time.sleep(BATCH_S / 10)

    def close(self, timeout: float | None = None) -> None:
        """Fetch and write everything queued, then end the thread."""
        self.closing.set()
        self.thread.join(timeout)

    def _loop(self) -> None:
        """Write what the script left once it logs no more (for now). Each wake takes the GIL from the training
        loop, so it wakes once 2 * BATCH_S after the latest step while the script logs, and every IDLE_S once
        nothing is left to write (a summary the script changes meanwhile is written within that)."""
        done, wait = False, BATCH_S
        while not done:
            done = self.closing.wait(wait)
            quiet = self.clock() - self._put_at
            if not done and quiet < 2 * BATCH_S:  # the script logs: it writes its own batches
                wait = min(2 * BATCH_S, max(BATCH_S, 2 * BATCH_S - quiet))
                continue
            with self._lock:
                self._add_inbox()
                self._take_window()
                read_ready(self.pending, self._rows)
                if done:  # the rest, still computing: `fetch` waits for them
                    while self.pending:
                        self._rows.append(Later(self.pending.popleft()))
                wrote = self._write_read()
                if not wrote:
                    self._write_batch([])  # nothing new: the writers write a summary the script changed
                wait = BATCH_S if wrote or self.pending else IDLE_S

    def _write_read(self) -> bool:
        """Write the steps read so far (hold `_lock`); whether there were any."""
        rows, self._rows = self._rows, []
        if rows:
            self._batched_at = self.clock()
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
