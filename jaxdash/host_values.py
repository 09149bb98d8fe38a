"""Logged JAX arrays read to the host on the fetch thread, holding the GIL the training loop wants as little as can be.

On the CPU backend `np.asarray(array)` releases the GIL and takes it back for every array, even a ready one: with
the training loop's thread running Python (dispatching the next steps), each take waits for that thread to let go,
~0.3-0.6 ms an array (`benchmarks.fetch_gil` prints it), and every hand-over stalls the loop. So a batch waits
once for all its arrays (`jax.block_until_ready` of the list: one release), and each small array is then read from
its buffer, ~2 us without letting go of the GIL. Bigger arrays (histograms, a few a step at most) and any array
this cannot read take `np.asarray`. On an accelerator one `jax.device_get` of the whole batch starts every copy
before waiting for any.
"""

from __future__ import annotations

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


def fetch(batch: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every value of every entry on the host (if JAX is in use): the sync point, here only."""
    jax = sys.modules.get("jax")
    if jax is None:
        return batch
    if jax.default_backend() != "cpu":
        return jax.device_get(batch)
    arrays = [value for values in batch for value in values.values() if isinstance(value, jax.Array)]
    if not arrays:
        return batch
    if not all(array.is_ready() for array in arrays):
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
