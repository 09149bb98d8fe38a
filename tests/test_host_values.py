"""Logged arrays read to the host as `np.asarray` reads them, without letting go of the GIL (`jaxdash.host_values`),
and written by the thread that logs while it logs, never waiting for a step still computing (`jaxdash.fetcher`):
no GIL hand-over with a training loop (`benchmarks.fetch_gil` measures what one costs)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

from jaxdash.fetcher import BATCH_S, WRITE_S, Fetcher
from jaxdash.host_values import fetch, host_value
from tests.client_scripts import rows

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


def test_while_a_script_logs_its_own_thread_writes_the_batches_and_the_fetch_thread_once_it_stops() -> None:
    now = [0.0]
    written: list[tuple[str, list[int]]] = []

    def write(parts: list) -> None:
        if parts:  # an idle fetch thread calls with none (the writers flush what they held back)
            written.append((threading.current_thread().name, [int(s) for part in parts for s in part.steps]))

    fetcher = Fetcher(write, clock=lambda: now[0])
    for step in range(50):  # within WRITE_S of the start: queued only
        fetcher.put(step, {"loss": 0.5})
    assert written == []
    now[0] = WRITE_S
    fetcher.put(50, {"loss": 0.5})  # due: this thread writes the batch
    assert written == [(threading.current_thread().name, list(range(51)))]
    fetcher.put(51, {"loss": 0.5})
    now[0] = WRITE_S + 3 * BATCH_S  # the script logs no more: the fetch thread writes step 51
    fetcher.sync()
    assert written[1:] == [("jaxdash-fetch", [51])]
    fetcher.close()


def test_a_step_still_computing_is_never_waited_for_and_a_donated_array_costs_its_own_step_only(caplog) -> None:
    now = [0.0]
    written: list[int] = []
    fetcher = Fetcher(lambda parts: written.extend(int(s) for part in parts for s in part.steps), clock=lambda: now[0])
    donated = jax.jit(lambda x: x + 1.0)(jnp.float32(1.0))
    jax.jit(lambda x: x * 2.0, donate_argnums=0)(donated)
    fetcher.put(0, {"loss": jnp.float32(0.5)})
    fetcher.put(1, {"loss": donated})
    fetcher.put(2, {"loss": jnp.float32(2.5)})
    slow = jax.jit(lambda x: jnp.tanh(x @ x @ x @ x).sum())(jnp.ones((1500, 1500)) / 1500)  # ~0.1-1 s of work
    now[0] = WRITE_S
    fetcher.put(3, {"loss": slow})  # due, and not computed yet: steps 0-2 written, step 3 left queued
    assert not slow.is_ready()
    assert written == [0, 2]
    assert "step 1" in caplog.text and "deleted" in caplog.text
    fetcher.close()  # waits for it
    assert written == [0, 2, 3]


def test_the_last_steps_before_a_script_goes_quiet_reach_the_run_folder_before_it_ends(tmp_path: Path) -> None:
    """Two batches moments apart (one log call ending step 4 and committing step 5), then nothing: the second
    was held back by the writers' flush interval, and stayed unwritten until `finish`."""
    import jaxdash

    run = jaxdash.init(project="quiet", runs_root=tmp_path, wandb="disabled", tensorboard=False)
    try:
        for step in range(5):
            run.log({"a": step}, step=step)  # step 4 stays open until step 5 comes
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and len(rows(Path(run.dir))) < 4:
            time.sleep(0.05)  # steps 0-3 written and flushed
        run.log({"late": 1.0}, step=5, commit=True)
        while time.monotonic() < deadline and [r["step"] for r in rows(Path(run.dir))][-1:] != [5]:
            time.sleep(0.05)  # the idle fetch thread flushes it (FLUSH_S after the batch before)
        assert [r["step"] for r in rows(Path(run.dir))] == [0, 1, 2, 3, 4, 5]
    finally:
        run.finish()
