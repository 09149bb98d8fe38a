"""A batch of logged steps as W&B keeps them: blocks of scalar columns, histograms and small lists (`Split`).

A fetched batch (`jaxdash.fetcher`) becomes parts the writers take whole (`jaxdash.rows_out`): consecutive steps
with the same scalar keys one `Block` of columns, an array of more than LIST_MAX elements a histogram, a smaller
one a list (`Values`); and the rules of what a logged value may be (`unstorable`), which `Run.log` asks too.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

HISTOGRAM_MAX = 1_000_000  # elements: bigger arrays are skipped with a warning, not copied to the host
Entry = tuple[int, dict[str, Any], int | tuple[int, ...]]  # (first step, values, steps: 0 for one step's values)


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

    def __call__(self, entries: list[Entry]) -> list[Part]:
        out: list[Part] = []
        i = 0
        while i < len(entries):
            step, values, steps = entries[i]
            if steps:
                j = i + 1
                while isinstance(steps, tuple) and j < len(entries) and _stacks_with(values, entries[j]):
                    j += 1
                out += self._chunk(*(_windows(entries[i:j]) if j > i + 1 else entries[i]))
                i = j
                continue
            j = i + 1
            keys = values.keys()
            while j < len(entries) and not entries[j][2] and entries[j][1].keys() == keys:
                j += 1
            out += self._steps(entries[i:j])
            i = j
        return _joined(out)

    def _steps(self, group: list[Entry]) -> list[Part]:
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

    def _chunk(self, first: int, values: dict[str, Any], steps: int | tuple[int, ...]) -> list[Part]:
        """A scanned chunk (arrays with a leading axis of `steps`, steps from `first` on) or a stacked window
        (`jaxdash.stacking`: `steps` the step numbers, arrays padded past them)."""
        numbers = np.array(steps) if isinstance(steps, tuple) else np.arange(first, first + steps)
        arrays = {k: np.asarray(v)[: len(numbers)] for k, v in values.items()}
        if all(a.shape == numbers.shape and numeric_kind(a.dtype) for a in arrays.values()):
            ints = frozenset(k for k, a in arrays.items() if numeric_kind(a.dtype) in "iu")
            bools = frozenset(k for k, a in arrays.items() if a.dtype.kind == "b")
            columns = {k: a.astype(np.float64) for k, a in arrays.items()}
            return [self._block(numbers, columns, ints, bools)]
        return [
            part
            for i, step in enumerate(numbers)
            for part in self._one(int(step), {k: a[i] for k, a in arrays.items()})
        ]

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


def _stacks_with(values: dict[str, Any], entry: Entry) -> bool:
    """Whether `entry` is a stacked window (`jaxdash.stacking`) of the keys and dtypes of `values`, another's."""
    other = entry[1]
    return (
        isinstance(entry[2], tuple)
        and other.keys() == values.keys()
        and all(getattr(other[k], "dtype", None) == getattr(v, "dtype", None) for k, v in values.items())
    )


def _windows(group: list[Entry]) -> Entry:
    """Consecutive stacked windows of the same keys and dtypes as one entry: each key's arrays cut to their
    window's steps (a window is padded) and joined, one block's work where there were several."""
    steps = tuple(step for _, _, window in group for step in window)
    values = {
        key: np.concatenate([np.asarray(stacked[key])[: len(window)] for _, stacked, window in group])
        for key in group[0][1]
    }
    return group[0][0], values, steps


def _joined(parts: list[Part]) -> list[Part]:
    """`parts` with each run of blocks of the same tags and kinds one block (scanned chunks come in several, and a
    stacked window may sit beside single steps of its keys)."""
    out: list[Part] = []
    for part in parts:
        last = out[-1] if out else None
        if (
            isinstance(part, Block)
            and isinstance(last, Block)
            and part.columns.keys() == last.columns.keys()
            and (part.ints, part.bools) == (last.ints, last.bools)
        ):
            columns = {k: np.concatenate([last.columns[k], part.columns[k]]) for k in part.columns}
            out[-1] = Block(np.concatenate([last.steps, part.steps]), columns, part.ints, part.bools)
        else:
            out.append(part)
    return out
