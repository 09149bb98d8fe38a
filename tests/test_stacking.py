"""Logged device scalars stacked on the device a window at a time (`jaxdash.stacking`): the same steps, values and
kinds reach the writers as when each step is read by itself, and nothing is waited for."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxdash.fetcher import BATCH_S, WRITE_S, Fetcher
from jaxdash.row_parts import Block
from jaxdash.stacking import STACK, Window

_identity = jax.jit(lambda x: x)


def _computed(value: object) -> jax.Array:
    return jax.block_until_ready(_identity(jnp.asarray(value)))  # a computation's output, as a loss is


def _written(steps: list[tuple[int, dict]]) -> list[Block]:
    """What a Fetcher writes for `steps` put in one batch, then closed."""
    now, parts = [0.0], []
    fetcher = Fetcher(parts.extend, clock=lambda: now[0])
    for step, values in steps:
        fetcher.put(step, values)
    fetcher.close()
    return parts


def _rows(parts: list) -> list[tuple[int, str, float, str]]:
    """(step, tag, value, kind) of every scalar written, kind "i", "b" or "" as the summary takes it."""
    out = []
    for part in parts:
        assert isinstance(part, Block)
        for i, step in enumerate(part.steps):
            for tag, column in part.columns.items():
                kind = "b" if tag in part.bools else "i" if tag in part.ints else ""
                out.append((int(step), tag, float(column[i]), kind))
    return out


def test_stacked_scalars_reach_the_writers_as_each_step_read_by_itself() -> None:
    logged = [
        (3 * i, {"loss": np.float32(1 / (i + 1)), "n": np.int32(i - 90), "ok": np.bool_(i % 3 == 0)})
        for i in range(2 * STACK + 7)  # two whole windows and a part of one; steps 0, 3, 6, ...
    ]
    on_device = _written([(s, {k: _computed(v) for k, v in values.items()}) for s, values in logged])
    on_host = _written([(s, {k: v.item() for k, v in values.items()}) for s, values in logged])
    assert _rows(on_device) == _rows(on_host)
    assert len(on_device) == 1  # the windows' blocks joined: one writer call for the batch
    assert _rows(on_device)[:3] == [(0, "loss", 1.0, ""), (0, "n", -90.0, "i"), (0, "ok", 1.0, "b")]


def test_steps_still_in_the_inbox_are_written_by_sync_in_the_order_they_came() -> None:
    """Fewer than STACK steps within BATCH_S only join the inbox (no window, no read yet); a summary read
    (`sync`) takes them, device scalars and Python numbers alike, in the order they were logged."""
    now, parts = [0.0], []
    fetcher = Fetcher(parts.extend, clock=lambda: now[0])
    for step in range(STACK - 1):
        fetcher.put(step, {"loss": float(step)} if step % 5 == 0 else {"loss": _computed(np.float32(step))})
    assert len(fetcher.inbox) == STACK - 1 and not parts
    now[0] = 1.0  # the script went quiet: the fetch thread writes what sync took
    fetcher.sync()
    assert [(step, value) for step, _, value, _ in _rows(parts)] == [(s, float(s)) for s in range(STACK - 1)]
    fetcher.close()


def test_a_changed_key_or_dtype_ends_the_window_and_keeps_its_own_kind() -> None:
    logged = [(i, {"loss": _computed(np.float32(i))}) for i in range(5)]
    logged += [(5, {"loss": _computed(np.int32(5))})]  # an int now: W&B's summary keeps it an int
    logged += [(6, {"loss": _computed(np.float32(6)), "acc": _computed(np.float32(0.5))})]
    logged += [(7, {"loss": 7.0})]  # a Python number: the per-step path
    rows = _rows(_written(logged))
    assert [(s, t, k) for s, t, _, k in rows] == [(0, "loss", ""), (1, "loss", ""), (2, "loss", ""), (3, "loss", ""),
                                                  (4, "loss", ""), (5, "loss", "i"), (6, "loss", ""), (6, "acc", ""),
                                                  (7, "loss", "")]  # fmt: skip
    assert [v for _, _, v, _ in rows] == [0, 1, 2, 3, 4, 5, 6, 0.5, 7]


def test_whole_windows_of_another_dtype_in_one_batch_keep_their_own_kind() -> None:
    """Consecutive stacked windows are read as one block only while their keys and dtypes agree: a window of
    int32 after one of float32 stays ints (W&B's summary keeps an int) with its own values."""
    logged = [(i, {"loss": _computed(np.float32(i + 0.5))}) for i in range(STACK)]
    logged += [(i, {"loss": _computed(np.int32(i))}) for i in range(STACK, 2 * STACK)]
    logged += [(i, {"loss": _computed(np.int32(i))}) for i in range(2 * STACK, 2 * STACK + 3)]
    rows = _rows(_written(logged))
    assert [(s, v, k) for s, _, v, k in rows] == [(i, i + 0.5, "") for i in range(STACK)] + [
        (i, float(i), "i") for i in range(STACK, 2 * STACK + 3)
    ]


def test_only_single_device_scalars_wait_in_a_window() -> None:
    window = Window()
    mesh = jax.sharding.Mesh(np.array(jax.devices()[:1]), ("d",))
    sharded = jax.device_put(jnp.float32(1), jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec()))
    for values in ({"v": sharded}, {"v": _computed(np.zeros(2, np.float32))}, {"v": 1.0}, {}, {"v": np.float32(1)}):
        assert not window.add(0, values), values
    assert window.add(0, {"v": _computed(np.float32(1))}) and len(window) == 1
    assert not window.add(1, {"v": sharded})  # the window keeps its own: the caller takes it, then this step


def test_a_window_is_never_waited_for_and_is_written_once_computed() -> None:
    now, written = [0.0], []
    fetcher = Fetcher(lambda parts: written.extend(int(s) for p in parts for s in p.steps), clock=lambda: now[0])
    for step in range(3):
        fetcher.put(step, {"loss": _computed(np.float32(step))})
    slow = jax.jit(lambda x: jnp.tanh(x @ x @ x @ x).sum())(jnp.ones((1500, 1500)) / 1500)  # ~0.1-1 s of work
    now[0] = WRITE_S
    fetcher.put(3, {"loss": slow})  # due: the window is stacked, behind a step still computing
    assert not slow.is_ready()
    assert written == []
    fetcher.close()  # waits for it
    assert written == [0, 1, 2, 3]


@pytest.mark.parametrize("pause", [False, True])
def test_a_script_that_stops_logging_gets_its_window_written_by_the_fetch_thread(pause: bool) -> None:
    written: list[int] = []
    fetcher = Fetcher(lambda parts: written.extend(int(s) for p in parts for s in p.steps))
    for step in range(5):
        fetcher.put(step, {"loss": _computed(np.float32(step))})
    fetcher.sync() if pause else fetcher.close()
    assert written == [0, 1, 2, 3, 4]
    fetcher.close()


def test_a_loop_filling_a_window_every_few_ms_has_its_rows_written_every_write_s_while_it_logs(monkeypatch) -> None:
    """10,000 steps a second fill a window every 6.4 ms: reads still come every BATCH_S and writes every WRITE_S,
    by the thread that logs (the page shows the run live), not only once the script pauses."""
    from jaxdash import fetcher as fetcher_module

    read = fetcher_module.read_ready

    def read_computed(pending: object, rows: list) -> None:  # the stacks dispatched so far computed: no race
        jax.block_until_ready([v for entry in pending for k, v in entry.items() if isinstance(k, str)])
        read(pending, rows)

    monkeypatch.setattr(fetcher_module, "read_ready", read_computed)
    now, writes = [0.0], []
    fetcher = Fetcher(lambda parts: parts and writes.append((now[0], int(parts[-1].steps[-1]))), clock=lambda: now[0])
    value = _computed(np.float32(0.5))
    for step in range(10_000):  # one second of the fake clock
        now[0] = step / 10_000
        fetcher.put(step, {"loss": value})
    while_logging = list(writes)
    fetcher.close()
    assert len(while_logging) >= 3, while_logging
    times = [0.0] + [at for at, _ in while_logging]
    assert max(b - a for a, b in zip(times, times[1:], strict=False)) <= WRITE_S + BATCH_S + 1e-9, while_logging
    assert all(at - last_step / 10_000 <= BATCH_S + 1e-9 for at, last_step in while_logging), while_logging
    assert writes[-1][1] == 9_999


def test_a_client_loop_logging_thousands_of_steps_a_second_reaches_the_run_folder_while_it_logs(tmp_path) -> None:
    """The run folder (what the page reads) gets a steady fast loop's rows while it still logs, not at its pause:
    a jitted scalar step runs at ~25,000-100,000 steps a second here, a window filled every few ms, and rows are
    written every WRITE_S of wall time, so they show long before 200,000 steps (2 s at the fastest)."""
    import jaxdash
    from runstore.run_folder import RunFolder

    settings = {"console": "off", "x_disable_stats": True}
    run = jaxdash.init(project="fast", runs_root=tmp_path, wandb="disabled", tensorboard=False, settings=settings)
    folder, step_fn, loss = RunFolder(run.dir), jax.jit(lambda x: x * 0.999), _computed(np.float32(1.0))
    seen, step = False, 0
    while not seen and step < 200_000:  # the run folder read every 1,000 steps, while logging
        loss = step_fn(loss)
        run.log({"loss": loss}, step=step)
        step += 1
        if step % 1000 == 0:
            seen = any(r.get("step", 0) >= 1000 and "loss" in r for r in folder.records()[0])
    run.finish()
    assert seen, f"no row past step 1000 in the run folder after {step} steps of logging"
