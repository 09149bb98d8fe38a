"""Logged JAX arrays read to the host without letting go of the GIL, and only once computed.

On the CPU backend `np.asarray(array)` releases the GIL and takes it back for every array, even a ready one: beside
a training loop's thread running Python, each take waits for that thread to let go, and each hand-over stalls the
loop (`benchmarks.fetch_gil`). So the entries of a batch are taken only once their arrays are computed
(`read_ready`; the others wait for a later one), and each small array is read from its buffer, ~0.5 us with
the GIL kept. Bigger arrays (histograms, a few a step at most) and any array this cannot read take `np.asarray`.
On an accelerator one `jax.device_get` of the whole batch starts every copy before waiting for any.
"""

from __future__ import annotations

import collections
import ctypes
import sys
from typing import Any

import numpy as np

READ_MAX = 32  # elements: arrays up to this size are read from their buffer (W&B's list size: scalars, small lists)
# A 0-d array of these dtypes is read as the Python number of its value (~0.3 us, `np.frombuffer` ~1 us).
SCALAR_READS = {
    np.dtype(np.float32): ctypes.c_float.from_address,
    np.dtype(np.float64): ctypes.c_double.from_address,
    np.dtype(np.int32): ctypes.c_int32.from_address,
    np.dtype(np.int64): ctypes.c_int64.from_address,
    np.dtype(np.bool_): ctypes.c_bool.from_address,
}


class Later:
    """A queued entry whose values `fetch` reads when its batch is written (it waits, or says why it cannot)."""

    __slots__ = ("values",)

    def __init__(self, values: dict[Any, Any]) -> None:
        self.values = values


def read_ready(pending: collections.deque, rows: list) -> None:
    """Move the leading entries of `pending` whose arrays are computed to `rows`, as their
    values on the host: a new dict of Python numbers and small arrays, which the garbage collector does not
    track; or `Later(entry)` (a deleted array, whose error `fetch` gives; any entry off the CPU backend, where
    one `device_get` of the batch is faster). The first entry still computing ends the read (a later call
    looks again); only this takes from `pending`."""
    jax = sys.modules.get("jax")
    on_cpu = jax is not None and jax.default_backend() == "cpu"
    array_type = jax.Array if jax is not None else ()
    while pending:
        try:
            row: Any = {}
            for key, value in pending[0].items():
                if isinstance(value, array_type):
                    if not value.is_ready():
                        return
                    value = host_value(value) if on_cpu else value
                row[key] = value
        except Exception:  # noqa: BLE001 - a deleted (donated) array: `fetch` says why
            row = None
        values = pending.popleft()
        rows.append(row if row is not None and (on_cpu or jax is None) else Later(values))


def fetch(batch: list[dict[Any, Any]]) -> list[dict[Any, Any]]:
    """Every value of every entry on the host, as new dicts, after one wait for any array still computing."""
    jax = sys.modules.get("jax")
    if jax is None:
        return [dict(values) for values in batch]
    if jax.default_backend() != "cpu":
        return jax.device_get(batch)
    arrays = [value for values in batch for value in values.values() if isinstance(value, jax.Array)]
    jax.block_until_ready(arrays)  # one wait for the batch; raises for a deleted (donated) array
    return [{k: host_value(v) if isinstance(v, jax.Array) else v for k, v in values.items()} for values in batch]


def host_value(array: Any) -> np.ndarray:
    """A ready CPU array's value: a small one read from its buffer (the GIL kept; a 0-d float32, float64, int32,
    int64 or bool one as a Python number), any other by `np.asarray`.

    A 0-d or 1-d buffer is its elements in order. The read is kept only if the array is still not
    deleted after it: a donated array is marked deleted before the computation that reuses its buffer starts,
    so a read that finished before the mark read the value (`np.asarray` then raises, as for any deleted array).
    """
    shape, dtype = array.shape, array.dtype
    read = None if shape else SCALAR_READS.get(dtype)
    if read is not None:
        try:
            number = read(array.unsafe_buffer_pointer()).value
        except Exception:  # noqa: BLE001 - sharded or deleted: the general path says why
            return np.asarray(array)
        return np.asarray(array) if array.is_deleted() else number
    if shape:
        if len(shape) > 1 or not 0 < shape[0] <= READ_MAX:
            return np.asarray(array)
        size = shape[0]
    else:
        size = 1
    if not isinstance(dtype, np.dtype):  # a PRNG key's dtype and other extended ones
        return np.asarray(array)
    try:
        address = array.unsafe_buffer_pointer()
    except Exception:  # noqa: BLE001 - sharded, deleted or not a plain buffer: the general path says why
        return np.asarray(array)
    value = np.frombuffer(ctypes.string_at(address, size * dtype.itemsize), dtype).reshape(shape)
    if array.is_deleted():
        return np.asarray(array)
    return value
