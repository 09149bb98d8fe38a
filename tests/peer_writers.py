"""Scripts that write a TensorBoard logdir with the real libraries, run by the peers venv's Python (tests/test_tb_peers.py).

Each is run as `python -c SCRIPT LOGDIR` in its own process, writes step by step with a flush each step
(so the mirror reads the files as they grow), and prints "done" at the end. None imports this repository.
"""

from __future__ import annotations

# Keras' TensorBoard callback (train/ and validation/ splits, weight histograms and images, the hparams
# plugin's Keras callback) plus tf.summary's scalar, image, histogram, text and hparams in a run of its own.
KERAS_AND_TF_SUMMARY = r"""
import os, sys
os.environ.setdefault("KERAS_BACKEND", "tensorflow")
import numpy as np, tensorflow as tf, keras
from tensorboard.plugins.hparams import api as hp
logdir = sys.argv[1]
rng = np.random.default_rng(0)
x = rng.normal(size=(96, 4)).astype("float32")
y = (x.sum(axis=1) > 0).astype("int32")
model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8, activation="relu"), keras.layers.Dense(2)])
model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
callbacks = [
    keras.callbacks.TensorBoard(f"{logdir}/keras", histogram_freq=1, write_images=True, write_graph=False),
    hp.KerasCallback(f"{logdir}/keras", {"units": 8, "optimizer": "adam"}),
]
model.fit(x, y, validation_split=0.25, epochs=3, batch_size=16, verbose=0, callbacks=callbacks)
writer = tf.summary.create_file_writer(f"{logdir}/summary")
with writer.as_default():
    hp.hparams({"lr": 0.01, "optimizer": "sgd", "layers": 2})
    for step in range(4):
        tf.summary.scalar("loss", 1.0 / (step + 1), step=step)
        tf.summary.scalar("eval/acc", 0.2 * step, step=step)
        tf.summary.image("samples", rng.integers(0, 255, (2, 8, 8, 3), dtype=np.uint8), step=step, max_outputs=2)
        tf.summary.histogram("weights", rng.normal(step, 1.0, 200), step=step)
        tf.summary.text("notes", f"step {step} done", step=step)
        writer.flush()
writer.close()
print("done", flush=True)
"""

# CLU's default writer (metric_writers.create_default_writer: logging plus TensorBoard summaries) with every
# general method: write_scalars, write_images, write_histograms, write_texts and write_hparams.
CLU_DEFAULT_WRITER = r"""
import sys
import numpy as np
from clu import metric_writers
logdir = sys.argv[1]
rng = np.random.default_rng(0)
writer = metric_writers.create_default_writer(f"{logdir}/clu")
writer.write_hparams({"learning_rate": 0.1, "optimizer": "momentum", "batch_size": 32})
for step in range(1, 5):
    writer.write_scalars(step, {"train_loss": 1.0 / step, "train_accuracy": 0.2 * step})
    writer.write_images(step, {"samples": rng.integers(0, 255, (2, 8, 8, 1), dtype=np.uint8)})
    writer.write_histograms(step, {"params/w": rng.normal(0, step, 300)})
    writer.write_texts(step, {"notes": f"step {step} done"})
    writer.flush()
writer.close()
print("done", flush=True)
"""

# The official Flax MNIST example's writer calls (examples/mnist/train.py: flax.metrics.tensorboard's
# SummaryWriter(workdir), hparams(dict(config)) once, then four scalars per epoch), on a small NNX model
# trained on synthetic 28x28 digits (the example's TFDS download is not reachable here).
FLAX_MNIST = r"""
import sys
import jax, jax.numpy as jnp, numpy as np, optax
from flax import nnx
from flax.metrics import tensorboard
workdir = sys.argv[1] + "/mnist"
config = {"learning_rate": 0.1, "momentum": 0.9, "batch_size": 32, "num_epochs": 3}
rng = np.random.default_rng(0)
images = rng.random((256, 28, 28, 1), dtype=np.float32)
labels = (images.mean(axis=(1, 2, 3)) * 20).astype(np.int32) % 10

class CNN(nnx.Module):
    def __init__(self, rngs):
        self.conv = nnx.Conv(1, 4, kernel_size=(3, 3), rngs=rngs)
        self.out = nnx.Linear(4 * 14 * 14, 10, rngs=rngs)
    def __call__(self, x):
        x = nnx.avg_pool(nnx.relu(self.conv(x)), window_shape=(2, 2), strides=(2, 2))
        return self.out(x.reshape(x.shape[0], -1))

def loss_fn(model, batch):
    logits = model(batch[0])
    return optax.softmax_cross_entropy_with_integer_labels(logits, batch[1]).mean(), logits

@nnx.jit
def train_step(model, optimizer, metrics, batch):
    (loss, logits), grads = nnx.value_and_grad(loss_fn, has_aux=True)(model, batch)
    metrics.update(loss=loss, logits=logits, labels=batch[1])
    optimizer.update(model, grads)

@nnx.jit
def eval_step(model, metrics, batch):
    loss, logits = loss_fn(model, batch)
    metrics.update(loss=loss, logits=logits, labels=batch[1])

model = CNN(nnx.Rngs(0))
summary_writer = tensorboard.SummaryWriter(workdir)
summary_writer.hparams(dict(config))
optimizer = nnx.Optimizer(model, optax.sgd(config["learning_rate"], config["momentum"]), wrt=nnx.Param)
metrics = nnx.MultiMetric(accuracy=nnx.metrics.Accuracy(), loss=nnx.metrics.Average("loss"))
for epoch in range(1, config["num_epochs"] + 1):
    for i in range(0, 192, config["batch_size"]):
        train_step(model, optimizer, metrics, (images[i:i + 32], labels[i:i + 32]))
    train_metrics = metrics.compute()
    metrics.reset()
    eval_step(model, metrics, (images[192:], labels[192:]))
    eval_metrics = metrics.compute()
    metrics.reset()
    summary_writer.scalar("train_loss", train_metrics["loss"], epoch)
    summary_writer.scalar("train_accuracy", train_metrics["accuracy"], epoch)
    summary_writer.scalar("test_loss", eval_metrics["loss"], epoch)
    summary_writer.scalar("test_accuracy", eval_metrics["accuracy"], epoch)
summary_writer.flush()
print("done", flush=True)
"""

# torch.utils.tensorboard's SummaryWriter: scalars, add_scalars (one sub-run a series), images, histograms,
# text and add_hparams (a sub-run of its own).
TORCH = r"""
import sys
import numpy as np, torch
from torch.utils.tensorboard import SummaryWriter
logdir = sys.argv[1]
torch.manual_seed(0)
writer = SummaryWriter(f"{logdir}/torch")
for step in range(5):
    writer.add_scalar("loss", 1.0 / (step + 1), step)
    writer.add_scalars("lr", {"adam": 1e-3 * (step + 1), "sgd": 0.1}, step)
    writer.add_image("samples/digit", torch.rand(3, 8, 8), step)
    writer.add_histogram("weights/w", torch.randn(300) + step, step)
    writer.add_text("notes", f"step {step} done", step)
    writer.flush()
writer.add_hparams({"lr": 0.01, "opt": "adam", "layers": 3}, {"hp/acc": 0.9}, run_name="hp")
writer.close()
print("done", flush=True)
"""

SCRIPTS = {
    "keras_and_tf_summary": KERAS_AND_TF_SUMMARY,
    "clu_default_writer": CLU_DEFAULT_WRITER,
    "flax_mnist": FLAX_MNIST,
    "torch": TORCH,
}
