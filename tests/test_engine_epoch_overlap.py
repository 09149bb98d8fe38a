"""At an epoch's end the device runs the next epoch's first chunk while the host evaluates and writes (#39).

The epoch-end work (the test evaluation, the parameter histograms, the checkpoint; ~90 ms an
epoch for MNIST) used to run with the device idle: the next epoch's first chunk was dispatched
after it. Now it reads a device copy of the epoch-end state and the next chunk is dispatched
first. The probe task reports each step the device executes; its writer, asked to write the
epoch-end record, waits for the next epoch's first step. Before the change it timed out. The
evaluation and histograms must still see the epoch-end state, not a later one.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import io_callback

from runwriters.base import MemoryWriter
from settings.task import EpochsConfig
from tests.test_engine_overlap import StepProbe
from training.runs.in_memory import train
from training.tasks.base import Data, Task

PROBE = StepProbe()
STEPS_PER_EPOCH = 160


@dataclass(frozen=True)
class EvalProbeConfig(EpochsConfig):
    """640 points in batches of 4: 160 steps an epoch, chunks of 4."""


class EvalProbeTask(Task):
    """y = w * x by SGD; each step tells PROBE its number; the evaluation reports the step count it saw."""

    name = "eval_probe"
    Config = EvalProbeConfig

    def load_data(self) -> Data:
        x = np.linspace(-1, 1, 640, dtype=np.float32)
        return Data(train={"x": x, "y": 2 * x}, test={"x": x[:8], "y": 2 * x[:8]})

    def init(self, key):
        return {"params": {"w": jnp.zeros((3,), jnp.float32)}, "n": jnp.zeros((), jnp.int32)}

    def step(self, state, batch):
        n = state["n"] + 1
        io_callback(PROBE.record, None, n, ordered=False)

        def loss_fn(w):
            return jnp.mean((w[0] * batch["x"] - batch["y"]) ** 2)

        loss, grad = jax.value_and_grad(loss_fn)(state["params"]["w"])
        return {"params": {"w": state["params"]["w"] - 0.1 * grad}, "n": n}, {"loss": loss}

    def evaluate(self, state, test):
        w = state["params"]["w"][0]
        return {"loss": jnp.mean((w * test["x"] - test["y"]) ** 2), "steps_seen": state["n"].astype(jnp.float32)}


class EpochEndWriter(MemoryWriter):
    """At the record of step `at` (an epoch's end) waits for the device to run step `at + 1`."""

    def __init__(self, at: int) -> None:
        super().__init__()
        self.at, self.overlapped = at, None

    def write_scalars(self, step, scalars, progress=None):
        if step == self.at and "test/loss" in scalars:
            self.overlapped = PROBE.wait_for(step + 1)
        super().write_scalars(step, scalars, progress)


def test_next_epochs_first_chunk_runs_while_the_epoch_end_is_evaluated_and_written():
    cfg = EvalProbeConfig(batch_size=4, epochs=2, log_every=4, ckpt_every=0, lr=0.1, optimizer="sgd")
    writer = EpochEndWriter(at=STEPS_PER_EPOCH)
    [result] = train(EvalProbeTask, cfg, writer)
    assert result.state == "finished" and result.steps == 2 * STEPS_PER_EPOCH
    assert writer.overlapped is True  # step 161 ran on the device while step 160's records were written
    by_step = {s: d for s, d in writer.scalars}
    # The evaluation and the histograms read the epoch-end state, not the one the next chunk made.
    assert by_step[STEPS_PER_EPOCH]["test/steps_seen"] == STEPS_PER_EPOCH
    assert by_step[2 * STEPS_PER_EPOCH]["test/steps_seen"] == 2 * STEPS_PER_EPOCH
    alone = MemoryWriter()  # the same first epoch, with nothing after it
    [one_epoch] = train(EvalProbeTask, EvalProbeConfig(**{**cfg.__dict__, "epochs": 1}), alone)
    assert by_step[STEPS_PER_EPOCH]["test/loss"] == one_epoch.final["test/loss"]
    histograms = {s: h["params/w"] for s, h in writer.histograms}
    assert histograms[STEPS_PER_EPOCH].tolist() == dict(alone.histograms)[STEPS_PER_EPOCH]["params/w"].tolist()
    assert histograms[STEPS_PER_EPOCH][0] != histograms[2 * STEPS_PER_EPOCH][0]
    steps = [s for s, scalars in writer.scalars if "train/loss" in scalars and s > 0]
    assert steps == list(range(4, 2 * STEPS_PER_EPOCH + 1, 4))  # every chunk written once, in order


def test_chunk_plan_runs_across_epochs_from_a_resumed_position():
    from training.engine.chunks import chunk_plan

    # epoch 2 resumed at step 8 of 10, chunks of 4, 3 epochs: its last chunk, then epoch 3 whole
    assert chunk_plan(2, 8, 10, 4, 3) == [(2, 8, 2), (3, 0, 4), (3, 4, 4), (3, 8, 2)]
    assert chunk_plan(1, 10, 10, 4, 2) == [(2, 0, 4), (2, 4, 4), (2, 8, 2)]  # resumed at epoch 1's end
    assert chunk_plan(2, 10, 10, 4, 2) == []  # the run's end
