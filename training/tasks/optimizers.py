"""Adam as `optax.adam` computes it, with one divide per parameter a step instead of two.

`optax.adam` divides each moment by its bias correction, `mu / (1 - b1**t)` and `nu / (1 - b2**t)`,
an element-wise divide by a scalar, then divides `mu_hat` by `sqrt(nu_hat) + eps`. On a CPU a
vector divide or square root costs ~10 cycles per 16 floats, so with ~109k parameters
(784-128-128-10) the two divides and the root were ~0.16 ms of a 0.38 ms MNIST step here
(`python -m benchmarks.step_costs`). Here the two scalar corrections are inverted once a step and
multiplied in: one divide and one root per element remain, which Adam needs.

The state is optax's own (`ScaleByAdamState` in a `chain` with `scale_by_learning_rate`, the same
`inject_hyperparams` hyperparameters), so checkpoints, PBT's learning-rate swaps and
`optax.adam`'s states are interchangeable. The moments are bit for bit optax's; the update can
differ from optax's in the last bit (x * (1/c) rounds twice where x / c rounds once).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import optax
from optax._src import numerics


def scale_by_adam(b1: Any = 0.9, b2: Any = 0.999, eps: Any = 1e-8, eps_root: Any = 0.0) -> optax.GradientTransformation:
    """`optax.scale_by_adam` (no Nesterov, moments in the parameters' dtype) with the bias corrections inverted once."""

    def init_fn(params: Any) -> optax.ScaleByAdamState:
        mu, nu = optax.tree.zeros_like(params), optax.tree.zeros_like(params)
        return optax.ScaleByAdamState(count=jnp.zeros([], jnp.int32), mu=mu, nu=nu)

    def update_fn(updates: Any, state: optax.ScaleByAdamState, params: Any = None) -> Any:
        del params
        mu = optax.tree.update_moment(updates, state.mu, b1, 1)
        nu = optax.tree.update_moment_per_elem_norm(updates, state.nu, b2, 2)
        count = numerics.safe_increment(state.count)
        inv1, inv2 = 1 / (1 - b1**count), 1 / (1 - b2**count)  # scalars: two divides a step, not two per parameter

        def scaled(m: jax.Array, v: jax.Array) -> jax.Array:
            return (m * inv1.astype(m.dtype)) / (jnp.sqrt(v * inv2.astype(v.dtype) + eps_root) + eps)

        return jax.tree.map(scaled, mu, nu), optax.ScaleByAdamState(count=count, mu=mu, nu=nu)

    return optax.GradientTransformation(init_fn, update_fn)


def adam(
    learning_rate: Any, b1: Any = 0.9, b2: Any = 0.999, eps: Any = 1e-8, eps_root: Any = 0.0
) -> optax.GradientTransformation:
    """Drop-in for `optax.adam(learning_rate, b1, b2, eps, eps_root)`: the same state, one divide per parameter."""
    return optax.chain(scale_by_adam(b1, b2, eps, eps_root), optax.scale_by_learning_rate(learning_rate))
