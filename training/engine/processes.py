"""One training job over many processes (`jax.distributed`): joining it, and which process writes.

`python -m training TASK ...` run in N processes with `--coordinator HOST:PORT --num-processes N
--process-id I` (or the variables JAX_COORDINATOR_ADDRESS, JAX_NUM_PROCESSES, JAX_PROCESS_ID) joins
one job before JAX's backend starts: the engine's mesh then spans `jax.devices()` of every process
and every process holds the same data set, so each device gathers its share of the global batch
from its own replica (no data crosses hosts), and the gradients' all-reduce spans the job. The
result is the one of a single process with as many devices on the same global batch.

Process 0 owns the run folder and the writers (TensorBoard's and W&B's "log from process 0"); the
others train into a scratch folder with no writers. CPU collectives across processes use gloo.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

ENV = ("JAX_COORDINATOR_ADDRESS", "JAX_NUM_PROCESSES", "JAX_PROCESS_ID")


@dataclass(frozen=True)
class JobFlags:
    """Where this process sits in a job: coordinator "host:port", process count, this process's id."""

    coordinator: str | None = None
    num_processes: int = 1
    process_id: int = 0


def from_env(flags: JobFlags | None = None) -> JobFlags:
    """The CLI's flags, or else the JAX_* variables; one process when neither names a job."""
    if flags is not None and flags.coordinator:
        return flags
    addr, count, pid = (os.environ.get(k) for k in ENV)
    if not addr:
        return JobFlags()
    try:
        return JobFlags(addr, int(count or 1), int(pid or 0))
    except ValueError:
        raise ValueError(f"{ENV[1]}={count!r} / {ENV[2]}={pid!r}: both must be whole numbers") from None


def join(flags: JobFlags) -> None:
    """`jax.distributed.initialize` for a job of 2+ processes (before any JAX computation); else nothing."""
    if not flags.coordinator or flags.num_processes < 2:
        return
    if not 0 <= flags.process_id < flags.num_processes:
        raise ValueError(f"--process-id {flags.process_id} is outside 0..{flags.num_processes - 1}")
    import jax

    if jax.distributed.is_initialized():
        return
    # CPU devices of different processes only talk through a collectives backend (default: none).
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(flags.coordinator, flags.num_processes, flags.process_id)


def is_lead() -> bool:
    """True in process 0 of a job, or outside one: the process that writes the run."""
    import sys

    jax = sys.modules.get("jax")
    if jax is None or not jax.distributed.is_initialized():
        return True
    return jax.process_index() == 0


def count() -> int:
    """Processes in this job (1 outside `jax.distributed`)."""
    import sys

    jax = sys.modules.get("jax")
    if jax is None or not jax.distributed.is_initialized():
        return 1
    return jax.process_count()


def agreed(flags: Sequence[bool]) -> tuple[bool, ...]:
    """Process 0's `flags` in every process (one small collective); `flags` as they are outside a job.

    What runs after a chunk (stop, checkpoint, evaluation, snapshots) launches jitted collectives and
    Orbax's barriers; every process must run the same ones, and the time-based ones (checkpoints
    every 30 s, the live fit) or a Stop seen by process 0 alone would otherwise differ.
    """
    if count() == 1:
        return tuple(flags)
    import numpy as np
    from jax.experimental import multihost_utils

    got = multihost_utils.broadcast_one_to_all(np.asarray(flags, dtype=np.int32))  # sync point: one per chunk
    return tuple(bool(v) for v in np.asarray(got))
