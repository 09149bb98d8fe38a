"""Logged arrays read to the host as `np.asarray` reads them (`jaxdash.host_values`), and freed by the training
thread, never by the fetch thread (`jaxdash.fetcher.Fetcher`): both keep the fetch thread from handing the GIL
back and forth with a training loop (`benchmarks.fetch_gil` measures what that costs)."""

from __future__ import annotations

import threading
import time

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

from jaxdash.fetcher import Fetcher
from jaxdash.host_values import fetch, host_value

DTYPES = [np.float32, np.int32, np.bool_, ml_dtypes.bfloat16, np.float16, np.int8, np.uint8, np.int16, np.uint32]
SHAPES = [(), (1,), (5,), (32,), (33,), (2, 2), (1, 1), (0,)]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_a_computed_array_reads_as_numpy_reads_it(dtype: type, shape: tuple[int, ...]) -> None:
    values = (np.arange(int(np.prod(shape))).reshape(shape) * 3 - 7).astype(dtype)
    array = jax.jit(lambda x: x)(jnp.asarray(values))  # a computation's output, as a logged loss is
    read = host_value(jax.block_until_ready(array))
    expected = np.asarray(array)
    assert np.asarray(read).dtype == expected.dtype or (shape == () and type(read) in (float, int, bool))
    np.testing.assert_array_equal(np.asarray(read, dtype=expected.dtype), expected)
    assert np.shape(read) == shape


def test_scalars_of_the_common_dtypes_read_as_python_numbers_of_the_same_value() -> None:
    for value in (np.float32(0.1), np.float32(-3e38), np.int32(-(2**31)), np.bool_(True), np.float32(np.nan)):
        array = jax.block_until_ready(jax.jit(lambda x: x)(jnp.asarray(value)))
        read = host_value(array)
        assert type(read) is type(np.asarray(array).item())
        np.testing.assert_array_equal(np.asarray(read, dtype=value.dtype), np.asarray(array))


def test_a_donated_array_fails_as_numpy_fails_and_a_batch_of_not_ready_arrays_is_waited_for() -> None:
    donated = jax.jit(lambda x: x + 1.0)(jnp.float32(1.0))
    jax.jit(lambda x: x * 2.0, donate_argnums=0)(donated)
    assert donated.is_deleted()
    with pytest.raises(RuntimeError, match="deleted"):
        np.asarray(donated)
    with pytest.raises(RuntimeError, match="deleted"):
        host_value(donated)
    step = jax.jit(lambda x: jnp.tanh(x @ x).sum())
    big = jnp.ones((600, 600)) / 600
    batch = [{"loss": step(big * i), "i": i} for i in range(8)]  # dispatched, most not computed yet
    fetched = fetch(batch)
    assert [row["i"] for row in fetched] == list(range(8))
    np.testing.assert_allclose([row["loss"] for row in fetched], [float(np.asarray(b["loss"])) for b in batch])


class Noted(float):
    """A logged number that notes the thread that frees it."""

    freed_by: list[str] = []

    def __del__(self) -> None:
        Noted.freed_by.append(threading.current_thread().name)


def test_written_entries_are_freed_by_the_thread_that_logs_never_by_the_fetch_thread() -> None:
    written: list[int] = []
    fetcher = Fetcher(lambda parts: written.extend(int(s) for p in parts for s in p.steps))
    Noted.freed_by.clear()
    for step in range(50):
        fetcher.put(step, {"loss": Noted(step)})
    fetcher.sync()
    assert written == list(range(50))
    assert Noted.freed_by == []  # written, and still held: the fetch thread freed none of them
    for step in range(50, 80):  # each put frees two written entries
        fetcher.put(step, {"loss": 0.5})
    assert len(Noted.freed_by) == 50
    fetcher.put(80, {"loss": Noted(80)})
    fetcher.close()
    time.sleep(0)
    assert set(Noted.freed_by) == {threading.current_thread().name}
    assert len(Noted.freed_by) == 51  # close freed the last one
