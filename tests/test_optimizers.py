"""Adam as the tasks build it (training/tasks/optimizers.py): optax.adam's state and numbers, fewer divides (#39)."""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import numpy as np
import optax

from training.tasks.mnist import MnistConfig, MnistTask
from training.tasks.optimizers import adam


def _params():
    rng = np.random.default_rng(0)
    return {"k": jnp.asarray(rng.standard_normal((64, 32), np.float32)), "b": jnp.zeros(32, jnp.float32)}


def test_same_state_as_optax_adam_and_the_same_trajectory_to_float_rounding():
    params = _params()
    ours, theirs = (optax.inject_hyperparams(f)(learning_rate=1e-2) for f in (adam, optax.adam))
    s1, s2 = ours.init(params), theirs.init(params)
    assert jax.tree.structure(s1) == jax.tree.structure(s2)  # checkpoints and PBT's lr swaps carry over
    assert sorted(s1.hyperparams) == sorted(s2.hyperparams)

    def run(tx, state, params):
        def step(carry, i):
            p, st = carry
            updates, st = tx.update(jax.tree.map(lambda x: jnp.sin(3.0 * x + i), p), st, p)
            return (optax.apply_updates(p, updates), st), None

        return jax.lax.scan(step, (params, state), jnp.arange(200, dtype=jnp.float32))[0][0]

    p1, p2 = jax.jit(run, static_argnums=0)(ours, s1, params), jax.jit(run, static_argnums=0)(theirs, s2, params)
    for a, b in zip(jax.tree.leaves(p1), jax.tree.leaves(p2), strict=True):
        np.testing.assert_allclose(a, b, rtol=0, atol=2e-5)  # 200 steps of lr 1e-2: last-bit differences only


def test_the_mnist_step_divides_once_per_parameter():
    """A vector divide costs ~10 cycles per 16 floats here: optax.adam's step had two per parameter."""
    task = MnistTask(MnistConfig(hidden=[16], batch_size=4))
    state = task.init(jax.random.key(0))
    batch = {"image": jnp.zeros((4, 784), jnp.float32), "label": jnp.zeros(4, jnp.int32)}
    hlo = jax.jit(task.step).lower(state, batch).compile().as_text()
    kernel = r"f32\[784,16\]"  # layer 1's kernel: one element-wise divide in its update, none in its moments
    divides = re.findall(rf"= {kernel}(?:\{{[^}}]*\}})? divide\(", hlo)
    assert len(divides) == 1, hlo
