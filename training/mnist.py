"""Flax Linen MLP on MNIST / Fashion-MNIST with a device-resident data set and chunked steps.

The whole (limited) data set is copied to the device once as float32 in [0, 1]. Each epoch draws
a permutation on the device; a chunk of K steps slices its [K, batch] indices from it and
gathers the batches inside the jitted `lax.scan`, so no data crosses host->device per step.
With several local devices the data set and the state are replicated and every batch is split
over them (training.sharding); the code is the same for one device.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import traverse_util
from flax.training.train_state import TrainState

from training.checkpoint import Checkpointer
from training.config import MnistConfig
from training.data import CLASS_NAMES, load_dataset
from training.errors import TrainingError
from training.loop import ChunkCompiler, Clock, TraceCounter, chunk_lengths, report_chunk
from training.result import TrainResult
from training.sharding import AXIS, DataParallel, resolve_devices
from training.writers.base import ClassificationReport, MetricWriter, Progress

REPORT_IMAGES = 64  # test images in the final classification report


class MLP(nn.Module):
    """784 -> hidden... -> 10 with ReLU."""

    hidden: Sequence[int]
    classes: int = 10

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        x = x.reshape((x.shape[0], -1))
        for size in self.hidden:
            x = nn.relu(nn.Dense(size)(x))
        return nn.Dense(self.classes)(x)


def make_tx(optimizer: str, lr: float) -> optax.GradientTransformation:
    """Adam or SGD with the learning rate held in the optimizer *state* (`optax.inject_hyperparams`).

    A population vmaps over that state, so K learning rates share one compiled program; single
    runs use the same structure, so a population member's checkpoint resumes as a single run.
    """
    return optax.inject_hyperparams(optax.adam if optimizer == "adam" else optax.sgd)(learning_rate=lr)


def init_params(cfg: MnistConfig, key: jax.Array) -> Any:
    """Initial MLP parameters drawn from `key`."""
    return MLP(tuple(cfg.hidden)).init(key, jnp.zeros((1, 28 * 28), jnp.float32))["params"]


def create_state(cfg: MnistConfig, key: jax.Array) -> TrainState:
    """Initial TrainState: MLP params from `key` and the optimizer named by cfg.optimizer."""
    params = init_params(cfg, key)
    return TrainState.create(apply_fn=MLP(tuple(cfg.hidden)).apply, params=params, tx=make_tx(cfg.optimizer, cfg.lr))


def train_step(state: TrainState, batch: dict[str, jax.Array]) -> tuple[TrainState, dict[str, jax.Array]]:
    """One Adam/SGD step on softmax cross-entropy; metrics are the batch's loss and accuracy (pre-update)."""

    def loss_fn(params):
        logits = state.apply_fn({"params": params}, batch["image"])
        return optax.softmax_cross_entropy_with_integer_labels(logits, batch["label"]).mean(), logits

    (loss, logits), grads = jax.value_and_grad(loss_fn, has_aux=True)(state.params)
    acc = jnp.mean(jnp.argmax(logits, -1) == batch["label"])
    return state.apply_gradients(grads=grads), {"loss": loss, "acc": acc}


def make_chunk(length: int, constrain: Callable[[Any], Any] = lambda batch: batch) -> Callable[..., Any]:
    """`length` steps in one scan: (state, images, labels, perm[S, B], start) -> (state, metrics[length]).

    `constrain` places each gathered batch (e.g. `DataParallel.constrain_batch`: split over devices).
    """

    def chunk(state: TrainState, images: jax.Array, labels: jax.Array, perm: jax.Array, start: jax.Array):
        idx = jax.lax.dynamic_slice_in_dim(perm, start, length)  # [length, batch]; start is traced: no recompile

        def body(state, batch_idx):
            return train_step(state, constrain({"image": images[batch_idx], "label": labels[batch_idx]}))

        return jax.lax.scan(body, state, idx)

    return chunk


def evaluate(apply_fn: Callable[..., jax.Array], params: Any, images: jax.Array, labels: jax.Array):
    """Test loss, accuracy and per-example predictions over the whole test set in one batch."""
    logits = apply_fn({"params": params}, images)
    loss = optax.softmax_cross_entropy_with_integer_labels(logits, labels).mean()
    preds = jnp.argmax(logits, -1)
    return loss, jnp.mean(preds == labels), preds


def _epoch_permutation(key: jax.Array, epoch: jax.Array, n: int, steps: int, batch: int) -> jax.Array:
    """Batch indices [steps, batch] of one epoch; the leftover n - steps*batch examples are skipped."""
    return jax.random.permutation(jax.random.fold_in(key, epoch), n)[: steps * batch].reshape(steps, batch)


def _report(names: Sequence[str], test_x: np.ndarray, test_y: np.ndarray, preds: np.ndarray) -> ClassificationReport:
    confusion = np.zeros((len(names), len(names)), np.int64)
    np.add.at(confusion, (test_y, preds), 1)
    wrong = np.flatnonzero(preds != test_y)
    pick = np.concatenate([wrong, np.flatnonzero(preds == test_y)])[:REPORT_IMAGES]  # misclassified first
    return ClassificationReport(list(names), confusion, test_x[pick], test_y[pick], preds[pick])


class Data(NamedTuple):
    """The (limited) data set: device copies for training/evaluation, host copies for the report."""

    images: jax.Array  # [N, 784] float32 in [0, 1], replicated on every device
    labels: jax.Array  # [N] int32
    test_images: jax.Array
    test_labels: jax.Array
    test_x: np.ndarray  # [M, 28, 28] uint8
    test_y: np.ndarray  # [M] int32
    steps_per_epoch: int


def load_data(cfg: MnistConfig, dp: DataParallel) -> Data:
    """Load, limit and copy the data set to the devices (host->device copies, once per run)."""
    train_x, train_y, test_x, test_y = load_dataset(cfg.dataset, cfg.data_dir)
    train_x, train_y = train_x[: cfg.train_limit], train_y[: cfg.train_limit]
    test_x, test_y = test_x[: cfg.test_limit], test_y[: cfg.test_limit]
    n = len(train_x)
    if n // cfg.batch_size < 1:
        raise TrainingError(f"The training set has {n} examples, fewer than --batch-size {cfg.batch_size}; lower it.")
    images = dp.replicate(train_x.reshape(n, -1).astype(np.float32) / 255.0)
    test_images = dp.replicate(test_x.reshape(len(test_x), -1).astype(np.float32) / 255.0)
    return Data(images, dp.replicate(train_y), test_images, dp.replicate(test_y), test_x, test_y, n // cfg.batch_size)


@dataclass
class Position:
    """Where the loop stands; saved in checkpoints so a resumed run continues mid-epoch exactly."""

    step: int = 0
    epoch: int = 1  # 1-based epoch in progress
    pos: int = 0  # steps done in this epoch
    loss_sum: float = 0.0  # sums of per-step loss/acc this epoch, for the epoch means
    acc_sum: float = 0.0
    next_eval: int | None = None
    test: dict[str, float] = field(default_factory=dict)  # latest test metrics


def train_mnist(
    cfg: MnistConfig,
    writer: MetricWriter,
    should_stop: Callable[[], bool] = lambda: False,
    ckpt: Checkpointer | None = None,
) -> TrainResult:
    """Train the MLP, logging each chunk of cfg.log_every steps and evaluating on the test set.

    Args:
      cfg: validated config (dataset, hidden sizes, optimizer, lr, batch size, epochs, limits, devices).
      writer: per chunk "train/loss", "train/acc", "perf/steps_per_sec"; "test/acc", "test/loss"
        every cfg.eval_every steps (at the first chunk boundary past it) and at each epoch end;
        "epoch/*" scalars and parameter histograms per epoch; a ClassificationReport at the end.
      should_stop: polled between chunks; True ends the run early with state "stopped".
      ckpt: saves every cfg.ckpt_every steps, when stopped and at the end; with a `resume_step`,
        training resumes from that checkpoint (same steps and values as an uninterrupted run).

    Returns:
      TrainResult with final {"train/loss", "train/acc"} (last epoch means) and {"test/acc", "test/loss"}.

    Raises:
      ConfigError: batch_size does not split evenly over the devices.
      DataUnavailable: the dataset is neither local nor downloadable.
      Diverged: a step's loss was NaN/inf (that chunk's scalars are written first).
    """
    clock = Clock()
    dp = DataParallel(resolve_devices(cfg.devices, cfg.batch_size))
    data = load_data(cfg, dp)
    spe, total_steps = data.steps_per_epoch, data.steps_per_epoch * cfg.epochs
    init_key, shuffle_key = jax.random.split(jax.random.key(cfg.seed))
    state = dp.replicate(create_state(cfg, init_key))
    at = Position(next_eval=cfg.eval_every or None)
    if ckpt is not None and ckpt.resume_step is not None:
        arrays, meta = ckpt.restore({"train_state": state, "shuffle_key": jax.random.key_data(shuffle_key)})
        state, shuffle_key = arrays["train_state"], jax.random.wrap_key_data(arrays["shuffle_key"])
        at = Position(**meta["position"])
        clock.start -= meta["wall_seconds"]  # wall time continues where the checkpoint left it
    traces = TraceCounter()
    compiler = ChunkCompiler(lambda length: make_chunk(length, dp.constrain_batch), traces)
    permute = jax.jit(
        traces.wrap("permutation", lambda k, e: _epoch_permutation(k, e, len(data.images), spe, cfg.batch_size)),
        out_shardings=dp.sharding(None, AXIS),  # each device holds the indices of its share of every batch
    )
    apply_fn = state.apply_fn
    eval_fn = jax.jit(traces.wrap("evaluate", lambda p, x, y: evaluate(apply_fn, p, x, y)))
    last_preds: list[jax.Array] = []  # predictions of the latest evaluation, left on the device

    def run_eval() -> dict[str, float]:
        loss, acc, preds = eval_fn(state.params, data.test_images, data.test_labels)
        last_preds[:] = [preds]
        loss, acc = jax.device_get((loss, acc))  # sync point: two scalars per evaluation
        return {"test/loss": float(loss), "test/acc": float(acc)}

    def save(force: bool) -> None:
        if ckpt is not None:
            arrays = {"train_state": state, "shuffle_key": jax.random.key_data(shuffle_key)}
            ckpt.maybe_save(at.step, arrays, {"position": asdict(at), "wall_seconds": clock.elapsed()}, force=force)

    plan = chunk_lengths(spe, cfg.log_every)
    stopped, evaluated = False, False
    for epoch in range(at.epoch + (at.pos == spe), cfg.epochs + 1):  # a checkpoint at an epoch end resumes with the next
        if epoch != at.epoch:
            at.epoch, at.pos, at.loss_sum, at.acc_sum = epoch, 0, 0.0, 0.0
        perm = permute(shuffle_key, np.int32(epoch))
        for length in plan[at.pos // cfg.log_every :]:  # chunks start at multiples of log_every within an epoch
            args = (state, data.images, data.labels, perm, np.int32(at.pos))  # only this scalar goes host->device
            fn = compiler.get(length, *args)
            state, m = clock.run_chunk(fn, length, *args)
            first, at.pos, at.step = at.step + 1, at.pos + length, at.step + length
            at.loss_sum, at.acc_sum = at.loss_sum + float(m["loss"].sum()), at.acc_sum + float(m["acc"].sum())
            scalars = {
                "train/loss": float(m["loss"].mean()),
                "train/acc": float(m["acc"].mean()),
                "perf/steps_per_sec": clock.steps_per_sec,
            }
            epoch_end = at.pos == spe
            evaluated = epoch_end or (at.next_eval is not None and at.step >= at.next_eval)
            if evaluated:
                at.test = run_eval()
                scalars.update(at.test)
                if at.next_eval is not None:
                    at.next_eval = (at.step // cfg.eval_every + 1) * cfg.eval_every
            if epoch_end:
                scalars.update(
                    {"epoch/train_loss": at.loss_sum / spe, "epoch/train_acc": at.acc_sum / spe, "epoch/test_acc": at.test["test/acc"]}
                )
            progress = Progress(
                step=at.step,
                total_steps=total_steps,
                epoch=epoch,
                total_epochs=cfg.epochs,
                wall_seconds=clock.elapsed(),
                compile_seconds=compiler.compile_seconds,
                steps_per_sec=clock.steps_per_sec,
            )
            report_chunk(writer, at.step, scalars, progress, m["loss"], first, cfg.lr)
            if epoch_end:
                flat = traverse_util.flatten_dict(jax.device_get(state.params), sep="/")  # sync point: once per epoch
                writer.write_histograms(at.step, {f"params/{k}": np.asarray(v) for k, v in flat.items()})
            stopped = at.step < total_steps and should_stop()
            save(force=stopped or at.step == total_steps)
            if stopped:
                break
        if stopped:
            break
    if not evaluated:  # stopped between evaluations, or resumed at the very end: test the final params
        at.test = run_eval()
    preds = np.asarray(jax.device_get(last_preds[0]))  # sync point: test predictions, once at the end
    report = _report(CLASS_NAMES[cfg.dataset], data.test_x, data.test_y, preds)
    writer.write_classification(at.step, report)
    final = {"train/loss": at.loss_sum / at.pos, "train/acc": at.acc_sum / at.pos, **at.test}
    extra = {
        "compile_seconds": compiler.compile_seconds,
        "steps_per_sec": clock.steps_per_sec,
        "traces": dict(traces.counts),
        "wall_seconds": clock.elapsed(),
        "confusion": report.confusion,
        "devices": dp.count,
    }
    return TrainResult(state="stopped" if stopped else "finished", final=final, steps=at.step, extra=extra)
