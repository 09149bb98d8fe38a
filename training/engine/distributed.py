"""One training job over many processes (`jax.distributed`): joining it, and which process writes.

`python -m training TASK ...` run in N processes with `--coordinator HOST:PORT --num-processes N
--process-id I` (or the variables JAX_COORDINATOR_ADDRESS, JAX_NUM_PROCESSES, JAX_PROCESS_ID; a flag
wins over its variable) joins one job before JAX's backend starts: the engine's mesh then spans
`jax.devices()` of every process and every process holds the same data set, so each device gathers
its share of the global batch from its own replica (no data crosses hosts), and the gradients'
all-reduce spans the job. The result is the one of a single process with as many devices on the
same global batch.

Process 0 owns the run folder and the writers (TensorBoard's and W&B's "log from process 0"); the
others train into a scratch folder with no writers. CPU collectives across processes use gloo.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

ENV = ("JAX_COORDINATOR_ADDRESS", "JAX_NUM_PROCESSES", "JAX_PROCESS_ID")
FLAGS = ("--coordinator", "--num-processes", "--process-id")


class JobError(RuntimeError):
    """This process could not join its job (coordinator unreachable, a process missing); one line."""


@dataclass(frozen=True)
class JobFlags:
    """Where this process sits in a job: coordinator "host:port", process count, this process's id."""

    coordinator: str | None = None
    num_processes: int = 1
    process_id: int = 0


def _given(flag: str | None, var: str, name: str) -> tuple[str | None, str]:
    """(value, how to name it in a message): the flag when given, else the variable."""
    if flag is not None:
        return flag.strip(), name
    return (os.environ.get(var) or "").strip() or None, f"${var}"


def _whole(text: str | None, name: str, default: int, example: str) -> int:
    if text is None:
        return default
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"{name} {text!r} is not a whole number; give {example}.") from None


def resolve(
    coordinator: str | None = None, num_processes: str | None = None, process_id: str | None = None
) -> JobFlags:
    """The job this process joins: each flag given, else its JAX_* variable; one process when neither names one.

    Raises:
      ValueError: one line naming the bad flag (or variable) and the fix.
    """
    addr, addr_name = _given(coordinator, ENV[0], FLAGS[0])
    count_text, count_name = _given(num_processes, ENV[1], FLAGS[1])
    pid_text, pid_name = _given(process_id, ENV[2], FLAGS[2])
    count = _whole(count_text, count_name, 1, "the job's process count, e.g. --num-processes 2")
    pid = _whole(pid_text, pid_name, 0, "this process's index from 0, e.g. --process-id 0")
    if count < 1:
        raise ValueError(f"{count_name} {count}: a job has at least one process; give e.g. --num-processes 2.")
    if not 0 <= pid < count:
        raise ValueError(
            f"{pid_name} {pid} is outside 0..{count - 1} ({count_name} {count}); "
            f"give each process its own id from 0 to {count - 1}."
        )
    if not addr:
        if count > 1:
            raise ValueError(
                f"{count_name} {count} needs --coordinator HOST:PORT: process 0's host and a free port, "
                "the same in every process."
            )
        return JobFlags()
    host, _, port = addr.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(
            f"{addr_name} {addr!r} is not HOST:PORT; give process 0's host and a free port, e.g. --coordinator node0:8476."
        )
    return JobFlags(addr, count, pid)


def from_env(flags: JobFlags | None = None) -> JobFlags:
    """`flags` when they name a job, else the job of the JAX_* variables (see `resolve`)."""
    if flags is not None and flags.coordinator:
        return flags
    return resolve()


def join(flags: JobFlags) -> None:
    """`jax.distributed.initialize` for a job of 2+ processes (before any JAX computation); else nothing.

    Raises:
      JobError: the job could not be joined (one line naming the coordinator).
    """
    if not flags.coordinator or flags.num_processes < 2:
        return
    if not 0 <= flags.process_id < flags.num_processes:
        raise ValueError(f"--process-id {flags.process_id} is outside 0..{flags.num_processes - 1}")
    import jax

    if not jax.distributed.is_initialized():
        # CPU devices of different processes only talk through a collectives backend (default: none).
        jax.config.update("jax_cpu_collectives_implementation", "gloo")
        try:
            jax.distributed.initialize(flags.coordinator, flags.num_processes, flags.process_id)
        except Exception as exc:  # noqa: BLE001 - gRPC/XLA errors of many kinds: one line for the user
            why = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
            raise JobError(
                f"process {flags.process_id} of {flags.num_processes} could not join the job at "
                f"{flags.coordinator} ({why}); start every process with the same --coordinator and --num-processes."
            ) from None
    _orbax_barriers_by_coordinator()


def _orbax_barriers_by_coordinator() -> None:
    """Orbax's multi-process barriers through JAX's coordination service instead of device collectives.

    Orbax runs its barriers on its own threads (our Orbax thread, its commit threads) while the
    training thread launches the next chunk; as collectives, two processes can issue them in a
    different order than the chunk's all-reduce and deadlock in gloo (a job hung at its first
    mid-run checkpoint). Coordination-service barriers involve no device and time out.
    """
    from absl import flags
    from orbax.checkpoint._src.multihost import multihost  # defines the flag

    if not flags.FLAGS.is_parsed():
        flags.FLAGS.mark_as_parsed()  # our CLI parses argparse, not absl: every absl flag keeps its default
    flags.FLAGS[multihost.EXPERIMENTAL_ORBAX_USE_DISTRIBUTED_BARRIER.name].value = True


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


def gathered(value: int) -> list[int]:
    """Every process's `value`, by process index (one small collective); [value] outside a job."""
    if count() == 1:
        return [value]
    import numpy as np
    from jax.experimental import multihost_utils

    got = multihost_utils.process_allgather(np.asarray([value], dtype=np.int32))  # sync point
    return [int(v) for v in np.asarray(got).reshape(-1)]
