"""The device runs the next chunk while the host writes the last one's records (#39).

A chunk's writes (run store, TensorBoard, W&B: ~10 ms a chunk) used to follow the device's work;
when nothing due after a chunk reads the state, the engine now dispatches the next chunk first.
The probe task reports each step it executes through `io_callback`; its writer, asked to write
a mid-epoch chunk, waits for the device to execute the next chunk's first step. Before the change
that step could only start after the writer returned: the wait timed out.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import io_callback

from runwriters.base import MemoryWriter
from settings.task import EpochsConfig
from training.runs.in_memory import train
from training.tasks.base import Data, Task

WAIT_S = 30.0  # generous: the next chunk's first step is ~1 ms of work once dispatched


@dataclass(frozen=True)
class ProbeConfig(EpochsConfig):
    """640 points in batches of 4: 160 steps an epoch, chunks of 4 (snapshots every 16 steps)."""


class StepProbe:
    """The highest step number the device has executed, and a way to wait for one."""

    def __init__(self) -> None:
        self.done = 0
        self.cond = threading.Condition()

    def record(self, n: np.ndarray) -> None:
        with self.cond:
            self.done = max(self.done, int(n))
            self.cond.notify_all()

    def wait_for(self, step: int) -> bool:
        with self.cond:
            return self.cond.wait_for(lambda: self.done >= step, timeout=WAIT_S)


PROBE = StepProbe()


class ProbeTask(Task):
    """y = w * x by SGD on mini-batches; each step tells PROBE its number as the device runs it."""

    name = "probe"
    Config = ProbeConfig

    def load_data(self) -> Data:
        x = np.linspace(-1, 1, 640, dtype=np.float32)
        return Data(train={"x": x, "y": 2 * x})

    def init(self, key):
        return {"w": jnp.zeros((), jnp.float32), "n": jnp.zeros((), jnp.int32)}

    def step(self, state, batch):
        n = state["n"] + 1
        io_callback(PROBE.record, None, n, ordered=False)
        loss, grad = jax.value_and_grad(lambda w: jnp.mean((w * batch["x"] - batch["y"]) ** 2))(state["w"])
        return {"w": state["w"] - 0.1 * grad, "n": n}, {"loss": loss}


class WaitingWriter(MemoryWriter):
    """At the chunk ending at `at`, waits for the device to run step `at + 1` (the next chunk's first)."""

    def __init__(self, at: int) -> None:
        super().__init__()
        self.at, self.overlapped = at, None

    def write_scalars(self, step, scalars, progress=None):
        if step == self.at:
            self.overlapped = PROBE.wait_for(step + 1)
        super().write_scalars(step, scalars, progress)


def test_next_chunk_runs_while_the_last_chunks_records_are_written():
    writer = WaitingWriter(at=8)  # the second chunk: mid-epoch, no evaluation, snapshot or checkpoint due
    cfg = ProbeConfig(batch_size=4, epochs=1, log_every=4, ckpt_every=0, lr=0.1, optimizer="sgd")
    [result] = train(ProbeTask, cfg, writer)
    assert result.state == "finished" and result.steps == 160
    assert writer.overlapped is True  # step 9 ran on the device while step 8's records were being written
    steps = [s for s, scalars in writer.scalars if "train/loss" in scalars and s > 0]
    assert steps == list(range(4, 161, 4))  # every chunk written once, in order
