"""The classic Flax MNIST loop (a jitted `train_step(state, idxs)` over device-resident data), tracked
live on the dashboard by jaxdash. The lines marked `# jaxdash` are all the tracking there is; the
README shows them as a diff against the plain loop.

    python examples/flax_mnist_loop.py [--dataset fashion_mnist] [--epochs 3] [--limit N]

It trains the seed's MLP 784-128-128-10 with Adam 1e-3, batch 32, and honours the page's Stop.
"""

from __future__ import annotations

import argparse

import jax
import jax.numpy as jnp
import optax
from flax import linen as nn
from flax.training import train_state

import jaxdash  # jaxdash


class MLP(nn.Module):
    """784-128-128-10."""

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        for width in (128, 128):
            x = nn.relu(nn.Dense(width)(x))
        return nn.Dense(10)(x)


def make_steps(images: jax.Array, labels: jax.Array, test_x: jax.Array, test_y: jax.Array):  # noqa: ANN201
    """The tutorial's jitted train step (indices in, the batch gathered on the device) and evaluation."""

    @jax.jit
    def train_step(state: train_state.TrainState, idxs: jax.Array):  # noqa: ANN202
        def loss_fn(params):  # noqa: ANN001, ANN202
            logits = state.apply_fn({"params": params}, images[idxs])
            loss = optax.softmax_cross_entropy_with_integer_labels(logits, labels[idxs]).mean()
            return loss, (logits.argmax(-1) == labels[idxs]).mean()

        (loss, acc), grads = jax.value_and_grad(loss_fn, has_aux=True)(state.params)
        return state.apply_gradients(grads=grads), loss, acc

    @jax.jit
    def evaluate(state: train_state.TrainState):  # noqa: ANN202
        logits = state.apply_fn({"params": state.params}, test_x)
        loss = optax.softmax_cross_entropy_with_integer_labels(logits, test_y).mean()
        return loss, (logits.argmax(-1) == test_y).mean()

    return train_step, evaluate


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dataset", default="fashion_mnist", choices=("mnist", "fashion_mnist"))
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--limit", type=int, default=None, help="train on the first N examples only")
    args = p.parse_args()
    train_x, train_y, test_x, test_y = jaxdash.load_dataset(args.dataset)
    train_x, train_y = train_x[: args.limit], train_y[: args.limit]
    scale = lambda a: jnp.asarray(a.reshape(len(a), -1), jnp.float32) / 255.0  # noqa: E731
    train_step, evaluate = make_steps(scale(train_x), jnp.asarray(train_y), scale(test_x), jnp.asarray(test_y))
    model = MLP()
    params = model.init(jax.random.key(0), jnp.ones((1, 784)))["params"]
    state = train_state.TrainState.create(apply_fn=model.apply, params=params, tx=optax.adam(args.lr))
    steps_per_epoch = len(train_x) // args.batch
    run = jaxdash.init(  # jaxdash
        project="flax-mnist",
        config=vars(args),
        total_steps=args.epochs * steps_per_epoch,  # jaxdash
    )  # jaxdash
    key, step = jax.random.key(1), 0
    for epoch in range(1, args.epochs + 1):
        key, sub = jax.random.split(key)
        perms = jax.random.permutation(sub, len(train_x))[: steps_per_epoch * args.batch]
        for idxs in perms.reshape(steps_per_epoch, args.batch):
            state, loss, acc = train_step(state, idxs)
            step += 1
            run.log({"train/loss": loss, "train/acc": acc, "epoch": epoch}, step=step)  # jaxdash: returns at once
            if run.should_stop():  # jaxdash: the page's Stop button
                break
        test_loss, test_acc = evaluate(state)
        run.log({"test/loss": test_loss, "test/acc": test_acc}, step=step)  # jaxdash: same step, one record
        print(f"epoch {epoch}: test accuracy {float(test_acc):.4f}", flush=True)
        if run.should_stop():  # jaxdash
            break
    run.finish()  # jaxdash


if __name__ == "__main__":
    main()
