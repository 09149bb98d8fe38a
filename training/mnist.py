"""Flax Linen MLP on MNIST / Fashion-MNIST with a device-resident data set and chunked steps.

The whole (limited) data set is copied to the device once as float32 in [0, 1]. Each epoch draws
a permutation on the device; a chunk of K steps slices its [K, batch] indices from it and
gathers the batches inside the jitted `lax.scan`, so no data crosses host->device per step.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import traverse_util
from flax.training.train_state import TrainState

from training.config import MnistConfig
from training.data import CLASS_NAMES, load_dataset
from training.errors import TrainingError
from training.loop import ChunkCompiler, Clock, TraceCounter, chunk_lengths, report_chunk
from training.result import TrainResult
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


def create_state(cfg: MnistConfig, key: jax.Array) -> TrainState:
    """Initial TrainState: MLP params from `key` and the optimizer named by cfg.optimizer."""
    model = MLP(tuple(cfg.hidden))
    params = model.init(key, jnp.zeros((1, 28 * 28), jnp.float32))["params"]
    tx = optax.adam(cfg.lr) if cfg.optimizer == "adam" else optax.sgd(cfg.lr)
    return TrainState.create(apply_fn=model.apply, params=params, tx=tx)


def train_step(state: TrainState, batch: dict[str, jax.Array]) -> tuple[TrainState, dict[str, jax.Array]]:
    """One Adam/SGD step on softmax cross-entropy; metrics are the batch's loss and accuracy (pre-update)."""

    def loss_fn(params):
        logits = state.apply_fn({"params": params}, batch["image"])
        return optax.softmax_cross_entropy_with_integer_labels(logits, batch["label"]).mean(), logits

    (loss, logits), grads = jax.value_and_grad(loss_fn, has_aux=True)(state.params)
    acc = jnp.mean(jnp.argmax(logits, -1) == batch["label"])
    return state.apply_gradients(grads=grads), {"loss": loss, "acc": acc}


def make_chunk(length: int) -> Callable[..., Any]:
    """`length` steps in one scan: (state, images, labels, perm[S, B], start) -> (state, metrics[length])."""

    def chunk(state: TrainState, images: jax.Array, labels: jax.Array, perm: jax.Array, start: jax.Array):
        idx = jax.lax.dynamic_slice_in_dim(perm, start, length)  # [length, batch]; start is traced: no recompile

        def body(state, batch_idx):
            return train_step(state, {"image": images[batch_idx], "label": labels[batch_idx]})

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


def train_mnist(cfg: MnistConfig, writer: MetricWriter, should_stop: Callable[[], bool] = lambda: False) -> TrainResult:
    """Train the MLP, logging each chunk of cfg.log_every steps and evaluating on the test set.

    Args:
      cfg: validated config (dataset, hidden sizes, optimizer, lr, batch size, epochs, limits).
      writer: per chunk "train/loss", "train/acc", "perf/steps_per_sec"; "test/acc", "test/loss"
        every cfg.eval_every steps (at the first chunk boundary past it) and at each epoch end;
        "epoch/*" scalars and parameter histograms per epoch; a ClassificationReport at the end.
      should_stop: polled between chunks; True ends the run early with state "stopped".

    Returns:
      TrainResult with final {"train/loss", "train/acc"} (last epoch means) and {"test/acc", "test/loss"}.

    Raises:
      DataUnavailable: the dataset is neither local nor downloadable.
      Diverged: a step's loss was NaN/inf (that chunk's scalars are written first).
    """
    clock = Clock()
    train_x, train_y, test_x, test_y = load_dataset(cfg.dataset, cfg.data_dir)
    train_x, train_y = train_x[: cfg.train_limit], train_y[: cfg.train_limit]
    test_x, test_y = test_x[: cfg.test_limit], test_y[: cfg.test_limit]
    n, batch = len(train_x), cfg.batch_size
    steps_per_epoch, total_steps = n // batch, (n // batch) * cfg.epochs
    if steps_per_epoch < 1:
        raise TrainingError(f"The training set has {n} examples, fewer than --batch-size {batch}; lower it.")

    # Host->device copies of the data, once per run.
    images = jax.device_put(train_x.reshape(n, -1).astype(np.float32) / 255.0)
    labels = jax.device_put(train_y)
    test_images = jax.device_put(test_x.reshape(len(test_x), -1).astype(np.float32) / 255.0)
    test_labels = jax.device_put(test_y)

    init_key, shuffle_key = jax.random.split(jax.random.key(cfg.seed))
    state = create_state(cfg, init_key)
    traces = TraceCounter()
    compiler = ChunkCompiler(make_chunk, traces)
    permute = jax.jit(traces.wrap("permutation", lambda k, e: _epoch_permutation(k, e, n, steps_per_epoch, batch)))
    apply_fn = state.apply_fn
    eval_fn = jax.jit(traces.wrap("evaluate", lambda p, x, y: evaluate(apply_fn, p, x, y)))

    last_preds: list[jax.Array] = []  # predictions of the latest evaluation, left on the device

    def run_eval() -> dict[str, float]:
        loss, acc, preds = eval_fn(state.params, test_images, test_labels)
        last_preds[:] = [preds]
        loss, acc = jax.device_get((loss, acc))  # sync point: two scalars per evaluation
        return {"test/loss": float(loss), "test/acc": float(acc)}

    step, stopped, test = 0, False, {}
    next_eval = cfg.eval_every or None
    for epoch in range(1, cfg.epochs + 1):
        perm = permute(shuffle_key, np.int32(epoch))
        pos, loss_sum, acc_sum = 0, 0.0, 0.0
        plan = chunk_lengths(steps_per_epoch, cfg.log_every)
        for i, length in enumerate(plan):
            args = (state, images, labels, perm, np.int32(pos))  # only this scalar goes host->device per chunk
            fn = compiler.get(length, *args)
            state, m = clock.run_chunk(fn, length, *args)
            first, pos, step = step + 1, pos + length, step + length
            loss_sum, acc_sum = loss_sum + float(m["loss"].sum()), acc_sum + float(m["acc"].sum())
            scalars = {
                "train/loss": float(m["loss"].mean()),
                "train/acc": float(m["acc"].mean()),
                "perf/steps_per_sec": clock.steps_per_sec,
            }
            epoch_end = i == len(plan) - 1
            if epoch_end or (next_eval is not None and step >= next_eval):
                test = run_eval()
                scalars.update(test)
                if next_eval is not None:
                    next_eval = (step // cfg.eval_every + 1) * cfg.eval_every
            if epoch_end:
                scalars.update(
                    {
                        "epoch/train_loss": loss_sum / pos,
                        "epoch/train_acc": acc_sum / pos,
                        "epoch/test_acc": test["test/acc"],
                    }
                )
            progress = Progress(
                step=step,
                total_steps=total_steps,
                epoch=epoch,
                total_epochs=cfg.epochs,
                wall_seconds=clock.elapsed(),
                compile_seconds=compiler.compile_seconds,
                steps_per_sec=clock.steps_per_sec,
            )
            report_chunk(writer, step, scalars, progress, m["loss"], first, cfg.lr)
            if epoch_end:
                flat = traverse_util.flatten_dict(jax.device_get(state.params), sep="/")  # sync point: once per epoch
                writer.write_histograms(step, {f"params/{k}": np.asarray(v) for k, v in flat.items()})
            stopped = step < total_steps and should_stop()
            if stopped:
                break
        if stopped:
            break
    if stopped and "test/acc" not in scalars:
        test = run_eval()
    preds = np.asarray(jax.device_get(last_preds[0]))  # sync point: test predictions, once at the end
    report = _report(CLASS_NAMES[cfg.dataset], test_x, test_y, preds)
    writer.write_classification(step, report)
    final = {"train/loss": loss_sum / pos, "train/acc": acc_sum / pos, **test}
    extra = {
        "compile_seconds": compiler.compile_seconds,
        "steps_per_sec": clock.steps_per_sec,
        "traces": dict(traces.counts),
        "wall_seconds": clock.elapsed(),
        "confusion": report.confusion,
    }
    return TrainResult(state="stopped" if stopped else "finished", final=final, steps=step, extra=extra)
