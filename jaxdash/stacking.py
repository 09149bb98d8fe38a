"""Logged device scalars stacked on the device, STACK steps in one array a key: one read where there were STACK.

A per-step loop's `run.log({"loss": loss})` hands over a 0-d JAX array still computing. Reading each one back
costs the loop's thread ~3 us a step on the CPU backend (an array's first `is_ready` ~1.1 us, its read ~1.9 us,
measured in the seed's MNIST loop) and a device-to-host copy each on an accelerator. So consecutive steps whose
values are all 0-d single-device JAX arrays, with the same keys and dtypes, wait in a `Window`; when it holds
STACK steps (or a batch is due, or the script pauses) each key's arrays go to one jitted `jnp.stack` (~1 us a
step to dispatch in that loop, never a wait: it runs on the device once its inputs are computed), and the
fetcher reads one array a key and writes the window as one block. Anything else (Python numbers, bigger arrays,
sharded ones, a changed key or dtype) ends the window and takes the per-step path; a stack that cannot run (a
donated array) hands its steps to that path too, where each step's own fault costs that step alone.
"""

from __future__ import annotations

import functools
import sys
from typing import Any

STACK = 64  # steps a stack: one jitted call of STACK arguments a key (a partial window is padded to it)


class Window:
    """Consecutive single steps of 0-d JAX arrays with the same keys and dtypes, not stacked yet."""

    def __init__(self) -> None:
        self.steps: list[int] = []
        self.columns: dict[str, list[Any]] = {}  # key -> its arrays, one a step
        self._avals: dict[str, Any] = {}  # key -> its first array's abstract value (shape, dtype, weak type)
        self._shardings: dict[str, Any] = {}  # key -> its first array's sharding (a SingleDeviceSharding)

    def __len__(self) -> int:
        return len(self.steps)

    def add(self, step: int, values: dict[str, Any]) -> bool:
        """Take one step's values if they stack with the window's; False (nothing taken) if they do not.

        JAX keeps one abstract value per shape and dtype, and the outputs of one computation share a sharding:
        two identity checks a value (a few 0.01 us) where comparing them costs ~0.3 us."""
        if not self.steps:
            return self._start(step, values)
        columns, avals, shardings = self.columns, self._avals, self._shardings
        if values.keys() != columns.keys():
            return False
        try:
            for key, value in values.items():
                if value.aval is not avals[key] or (
                    value.sharding is not shardings[key] and not self._same(key, value)
                ):
                    return False
        except Exception:  # noqa: BLE001 - a Python number, a tracer, another array-like: not an array to stack
            return False
        self.steps.append(step)
        for key, value in values.items():
            columns[key].append(value)
        return True

    def _same(self, key: str, value: Any) -> bool:
        """Whether `value`, a 0-d array of the window's dtype, is on the window's one device."""
        sharding = value.sharding
        return type(sharding) is type(self._shardings[key]) and sharding == self._shardings[key]

    def _start(self, step: int, values: dict[str, Any]) -> bool:
        """Open the window on one step's values if they are all 0-d single-device JAX arrays (never a sharded
        one: its stack would be a computation of every process holding a part of it, which only this one runs)."""
        jax = sys.modules.get("jax")
        if jax is None or not values:
            return False
        single = jax.sharding.SingleDeviceSharding
        try:
            for value in values.values():
                if not isinstance(value, jax.Array) or type(value.sharding) is not single or value.shape:
                    return False
                if not value.is_fully_addressable:
                    return False
        except Exception:  # noqa: BLE001 - a tracer (a jax.Array to isinstance) has no sharding to read
            return False
        self.steps.append(step)
        self.columns = {key: [value] for key, value in values.items()}
        self._avals = {key: value.aval for key, value in values.items()}
        self._shardings = {key: value.sharding for key, value in values.items()}
        return True

    def take(self) -> list[tuple[int, dict[str, Any], int | tuple[int, ...]]]:
        """Empty the window into queue entries (first step, values, steps): one of a stacked array a key (padded to
        STACK) and the window's steps; or, if a stack cannot be dispatched (a deleted array, arrays on two devices),
        one a step (steps 0); none for an empty window."""
        if not self.steps:
            return []
        steps, columns = tuple(self.steps), self.columns
        self.steps, self.columns = [], {}
        pad = STACK - len(steps)
        try:
            stacked = {key: _stack(*arrays, *[arrays[-1]] * pad) for key, arrays in columns.items()}
        except Exception:  # noqa: BLE001 - the per-step path reads each step and says which one failed
            return [(step, {key: arrays[i] for key, arrays in columns.items()}, 0) for i, step in enumerate(steps)]
        return [(steps[0], stacked, steps)]


def _stack(*arrays: Any) -> Any:
    return _stacker()(*arrays)


@functools.cache
def _stacker() -> Any:
    """The jitted stack (compiled once a dtype, ~30 ms); JAX is imported only by a script that logs its arrays."""
    import jax
    import jax.numpy as jnp

    return jax.jit(lambda *arrays: jnp.stack(arrays))
