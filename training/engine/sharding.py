"""Data parallelism over the local devices: the batch is split along a "data" mesh axis, the rest replicated.

One code path for one CPU, 8 forced host devices (tests) and all GPUs of a host: the jitted
chunk is written for a single device and XLA's SPMD partitioner splits it from the shardings
of its inputs plus one constraint on the batch. Parameters and optimizer state are replicated,
so the partitioner inserts one all-reduce of the gradients per step; each device gathers its
share of the batch from its own replica of the (small) data set, so no data moves between
devices. The mesh axis is `Auto`: `jax.make_mesh` now defaults to `Explicit` sharding-in-types,
which would require every op to state how its output is sharded.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import numpy as np
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

from settings.config import ConfigError

AXIS = "data"


def resolve_devices(requested: int, batch_size: int) -> list[jax.Device]:
    """The devices a run uses: the first `requested` local ones, or all of them for 0.

    Raises:
      ConfigError: more devices asked for than the host has, or a batch that does not split
        evenly over them (each device must get the same number of examples).
    """
    available = jax.local_devices()
    n = requested or len(available)
    if jax.process_count() > 1:  # one job over many processes: the mesh spans every process's devices
        if n != len(available):
            raise ConfigError(
                {
                    "devices": f"a job of {jax.process_count()} processes uses all {len(available)} devices of each; use --devices 0."
                }
            )
        available, n = jax.devices(), len(jax.devices())
    if n > len(available):
        kind = available[0].platform.upper()
        raise ConfigError(
            {
                "devices": f"asks for {n} devices but this host has {len(available)} {kind} device(s); use --devices 0 for all."
            }
        )
    if batch_size % n:
        lower = n * (batch_size // n)
        fits = " or ".join(str(b) for b in (lower, lower + n) if b > 0)
        raise ConfigError(
            {
                "batch_size": f"must be a multiple of the {n} devices it is split over (got {batch_size}); "
                f"use --batch-size {fits}, or fewer --devices."
            }
        )
    return available[:n]


class DataParallel:
    """A 1-D mesh over `devices` and the two shardings training needs.

    Args:
      devices: the devices to split every batch over (see `resolve_devices`).
    """

    def __init__(self, devices: Sequence[jax.Device]):
        self.devices = list(devices)
        self.mesh = jax.make_mesh((len(self.devices),), (AXIS,), axis_types=(AxisType.Auto,), devices=self.devices)
        self.replicated = NamedSharding(self.mesh, P())

    @property
    def count(self) -> int:
        return len(self.devices)

    def sharding(self, *spec: str | None) -> NamedSharding:
        """NamedSharding of an array whose axes are laid out as `spec`, e.g. (None, "data")."""
        return NamedSharding(self.mesh, P(*spec))

    def replicate(self, tree: Any) -> Any:
        """A full copy of every leaf on every device (parameters, optimizer state, the data set)."""
        if jax.process_count() == 1:
            return jax.device_put(tree, self.replicated)
        # Across processes each one hands over its own (identical) copy: no device_put to remote devices.
        return jax.tree.map(
            lambda a: jax.make_array_from_process_local_data(self.replicated, np.asarray(jax.device_get(a))), tree
        )

    def constrain_batch(self, batch: Any) -> Any:
        """Inside jit: split the leading (example) axis of every leaf over the devices."""
        return jax.lax.with_sharding_constraint(batch, self.sharding(AXIS))
