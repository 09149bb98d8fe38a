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
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from jaxdash.host_values import Later, fetch, read_ready

log = logging.getLogger("jaxdash")

BATCH_S = 0.05  # how often read values are written (the page refreshes every 0.5 s)
READS_PER_PUT = 4  # computed steps a `put` reads at most (a loop logging every step has ~1 a put)
MAX_PENDING = 100_000  # steps queued before `log` waits for this thread (backpressure, not unbounded memory)
HISTOGRAM_MAX = 1_000_000  # elements: bigger arrays are skipped with a warning, not copied to the host

Entry = tuple[int, dict[str, Any], int]  # (first step, values, steps: 0 for one step's values)
# A queued step is its values' dict alone, its step (and a chunk's steps) kept under these keys: one object the
# garbage collector tracks a step besides the arrays, few enough that queued steps set off no collection.
_STEP, _STEPS = object(), object()


class Block:
    """Scalars of consecutive steps as columns: `columns[tag][i]` belongs to `steps[i]` (float64, or bool for a
    tag whose every value was a bool: W&B keeps `true` where the run folder charts 1.0)."""

    __slots__ = ("bools", "columns", "ints", "steps")

    def __init__(self, steps: np.ndarray, columns: dict[str, np.ndarray], ints: frozenset[str] = frozenset(),
                 bools: frozenset[str] = frozenset()) -> None:  # fmt: skip
        self.steps, self.columns = steps, columns
        self.ints = ints  # tags whose last value was an integer (W&B's summary keeps it an int)
        self.bools = bools  # tags whose values were bools (W&B's history and summary keep true/false)


Histograms = tuple[int, dict[str, np.ndarray]]  # (step, arrays) of one step
LIST_MAX = (
    32  # elements: W&B keeps an array of at most this many as a list (`wandb.util.json_friendly`), bins a bigger one
)


class Values:
    """JSON values of one step that W&B's history keeps as they are: arrays of at most LIST_MAX elements (nested
    ones too) and Python lists, as lists."""

    __slots__ = ("step", "values")

    def __init__(self, step: int, values: dict[str, Any]) -> None:
        self.step, self.values = step, values


Part = Block | Histograms | Values


def numeric_kind(dtype: Any) -> str:
    """NumPy's kind letter of a number's dtype ("b", "i", "u", "f"), also for ml_dtypes' bfloat16, float8,
    float4 and int4 kinds (JAX's low-precision dtypes), whose NumPy kind is "V"; "" for anything else."""
    try:
        dt = np.dtype(dtype)
    except TypeError:
        return ""
    if dt.kind in "biuf":
        return dt.kind
    name = dt.name if dt.kind == "V" and dt.type.__module__.startswith("ml_dtypes") else ""
    if name.startswith(("float", "bfloat")):
        return "f"
    return "u" if name.startswith("uint") else "i" if name.startswith("int") else ""


def as_numbers(arr: np.ndarray) -> np.ndarray:
    """`arr` in a dtype NumPy computes with: ml_dtypes' floats as float64 and their ints as int64 (the same
    values, as W&B reads them with `.item()` / `.tolist()`), any other array as it is."""
    if arr.dtype.kind != "V":
        return arr
    return arr.astype(np.float64 if numeric_kind(arr.dtype) == "f" else np.int64)


def value_kind(value: Any) -> str:
    """`numeric_kind` of a logged value: Python's bool and int too (a float or anything else: its dtype's, or "f")."""
    if isinstance(value, bool):
        return "b"
    if isinstance(value, int):
        return "i"
    dtype = getattr(value, "dtype", None)
    return "f" if dtype is None else numeric_kind(dtype)


def unstorable(value: Any) -> str | None:
    """Why a metric value `run.log` took cannot be stored (None if it can), from its type, shape and dtype only:
    never a device sync, so `Run.log` asks before a value replaces an accepted one of the same step and key,
    and `Split` drops by the same rule. A finite or non-finite number, a bool and a numeric array are stored."""
    if isinstance(value, int) and not isinstance(value, bool):
        try:
            float(value)
        except OverflowError as exc:
            return f"int value cannot be stored ({exc})"
        return None
    size, dtype = getattr(value, "size", None), getattr(value, "dtype", None)
    if size is None or dtype is None:
        return None  # a float, or something `Split` converts and judges itself
    kind = numeric_kind(dtype)
    if not kind:
        return f"a {type(value).__name__} of dtype {dtype} is no metric"
    if size <= HISTOGRAM_MAX:  # one element: a number; up to LIST_MAX: a list (an empty one too); else binned
        return None
    return f"an array of shape {np.shape(value)} and dtype {dtype} is no metric"


class Split:
    """Fetched entries as blocks of scalar columns (and per-step histograms), one warning per key for
    values that are no metric and for non-finite ones.

    Consecutive single steps with the same keys become one block (one `np.array` per key, not one
    record per step); a `lax.scan` chunk is a block as it came. Only entries holding arrays of more
    than one element per step take the per-step path.
    """

    def __init__(self, warn: Callable[[str, str], None]) -> None:
        self.warn = warn

    def __call__(self, entries: list[tuple[int, dict[str, Any], int]]) -> list[Part]:
        out: list[Part] = []
        i = 0
        while i < len(entries):
            step, values, steps = entries[i]
            if steps:
                out += self._chunk(step, values, steps)
                i += 1
                continue
            j = i + 1
            keys = values.keys()
            while j < len(entries) and not entries[j][2] and entries[j][1].keys() == keys:
                j += 1
            out += self._steps(entries[i:j])
            i = j
        return out

    def _steps(self, group: list[tuple[int, dict[str, Any], int]]) -> list[Part]:
        """Single steps with the same keys: one block, unless a value is an array (then step by step)."""
        columns = {}
        for key in group[0][1]:
            try:
                column = np.array([values[key] for _, values, _ in group], dtype=np.float64)
            except (TypeError, ValueError, OverflowError):  # ragged, not numbers, too big: the per-step path says which
                column = None
            if column is None or column.shape != (len(group),):
                return [part for step, values, _ in group for part in self._one(step, values)]
            columns[key] = column
        ints = frozenset(k for k, v in group[-1][1].items() if value_kind(v) in "iu")
        bools = frozenset(k for k in columns if all(value_kind(values[k]) == "b" for _, values, _ in group))
        return [self._block(np.array([step for step, _, _ in group]), columns, ints, bools)]

    def _chunk(self, first: int, values: dict[str, Any], steps: int) -> list[Part]:
        """A scanned chunk: arrays with a leading axis of `steps`."""
        arrays = {k: np.asarray(v) for k, v in values.items()}
        if all(a.shape == (steps,) and numeric_kind(a.dtype) for a in arrays.values()):
            ints = frozenset(k for k, a in arrays.items() if numeric_kind(a.dtype) in "iu")
            bools = frozenset(k for k, a in arrays.items() if a.dtype.kind == "b")
            columns = {k: a.astype(np.float64) for k, a in arrays.items()}
            return [self._block(np.arange(first, first + steps), columns, ints, bools)]
        return [part for i in range(steps) for part in self._one(first + i, {k: a[i] for k, a in arrays.items()})]

    def _block(self, steps: np.ndarray, columns: dict[str, np.ndarray], ints: frozenset[str] = frozenset(),
               bools: frozenset[str] = frozenset()) -> Block:  # fmt: skip
        for key, column in columns.items():
            if not np.isfinite(column).all():
                bad = column[~np.isfinite(column)][0]
                self.warn(key, f"{key}: {bad} logged (kept; the charts show a gap there)")
        for key in bools:
            columns[key] = columns[key].astype(bool)
        return Block(steps, columns, ints, bools)

    def _one(self, step: int, values: Mapping[str, Any]) -> list[Part]:
        """One step whose values include arrays: its scalars as a block of one, its arrays as W&B keeps them
        (`wandb.util.json_friendly`): one element as a number, up to LIST_MAX as a list, more as a histogram."""
        scalars, histograms, lists, ints, bools = {}, {}, {}, set(), set()
        for key, value in values.items():
            why = unstorable(value)
            if why is not None:
                self.warn(key, f"{key}: {why}; not logged")
                continue
            try:
                arr = np.asarray(value)
                kind = value_kind(value)
                if isinstance(value, (list, tuple)) or (kind and arr.size != 1 and arr.size <= LIST_MAX):
                    lists[key] = as_numbers(arr).tolist()  # a Python list stays a list whatever its length, as W&B's
                elif arr.size == 1:
                    scalars[key] = np.array([float(arr.item())])
                    ints.update([key] if kind in "iu" else [])
                    bools.update([key] if kind == "b" else [])
                elif kind and 0 < arr.size <= HISTOGRAM_MAX:
                    histograms[key] = arr if kind == "f" else as_numbers(arr)  # W&B bins a float in its dtype
                else:
                    self.warn(
                        key, f"{key}: an array of shape {arr.shape} and dtype {arr.dtype} is no metric; not logged"
                    )
            except (TypeError, ValueError, OverflowError) as exc:  # e.g. an int past a float's range
                self.warn(key, f"{key}: {type(value).__name__} value cannot be stored ({exc}); not logged")
        out: list[Part] = [self._block(np.array([step]), scalars, frozenset(ints), frozenset(bools))] if scalars else []
        return out + ([(step, histograms)] if histograms else []) + ([Values(step, lists)] if lists else [])


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
                    self._write_read()

    def _write_read(self) -> None:
        """Write the steps read so far (hold `_batch`)."""
        self._batched_at = self.clock()
        rows, self._rows = self._rows, []
        if rows:
            self._write_batch(rows)
            self.written += len(rows)

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
