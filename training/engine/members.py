"""The member axis on the host side: each member's run directory, writer and checkpointer.

A single run is one member. A population's members share one compiled program on the device;
here they are K ordinary runs: each gets its own records, checkpoints and end. A member whose
loss goes non-finite ends as "diverged" while the others go on.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from runstore.run_folder import RunFolder
from runwriters.base import MetricWriter, Progress
from training.errors import Diverged
from training.runs.lifecycle import close_run, describe_error

# One program per tree shape, not one op-by-op compile per leaf (and, for take, per member index):
# a population of three MLPs paid ~40 small compiles here, ~0.2 s of a 1.3 s trial (sweep_queue).
_stack_on_device = jax.jit(lambda trees: jax.tree.map(lambda *leaves: jnp.stack(leaves), *trees))
_take_on_device = jax.jit(lambda tree, i: jax.tree.map(lambda a: a[i], tree))  # i traced: any member


def stack(trees: Sequence[Any]) -> Any:
    """One pytree with a leading member axis from K pytrees of the same structure."""
    return _stack_on_device(list(trees))


def take(tree: Any, i: int, stacked: bool) -> Any:
    """Member i's slice of a stacked pytree (the tree itself when there is no member axis).

    Host (NumPy) trees are sliced on the host (views, no copy); device trees in one jitted call.
    """
    if not stacked:
        return tree
    if all(isinstance(leaf, np.ndarray) for leaf in jax.tree.leaves(tree)):
        return jax.tree.map(lambda a: a[i], tree)
    return _take_on_device(tree, i)


def first_nonfinite(values: np.ndarray) -> int | None:
    """Index of the first NaN/inf in a 1-D host array, or None."""
    bad = np.flatnonzero(~np.isfinite(values))
    return int(bad[0]) if bad.size else None


@dataclass
class Member:
    """One run of a population (or the only one): where it writes and how it ends."""

    run_dir: Path | None  # None: an in-memory run (tests, notebooks) with no run directory
    writer: MetricWriter
    lr: float
    ckpt: Any = None  # a training.runs.checkpoint.Checkpointer, or None
    state: str = "running"
    message: str | None = None


class Members:
    """The K members, in member-axis order; a finished or diverged member is taken out of reporting."""

    def __init__(self, members: Sequence[Member]):
        self.members = list(members)

    def __len__(self) -> int:
        return len(self.members)

    def alive(self) -> list[int]:
        """Indices of the members still training."""
        return [i for i, m in enumerate(self.members) if m.state == "running"]

    def writer(self, i: int) -> MetricWriter:
        return self.members[i].writer

    def set_phase(self, phase: str) -> None:
        """Tell the page what the run is doing before its first step ("loading data", "compiling")."""
        for i in self.alive():
            if self.members[i].run_dir is not None:
                RunFolder(self.members[i].run_dir).write_status(phase=phase)

    def report(
        self,
        step: int,
        scalars: Sequence[Mapping[str, float]],
        progress: Progress,
        losses: np.ndarray,
        first_step: int,
        rescue: bool = False,
    ) -> list[int]:
        """Write and flush each live member's chunk; a member whose loss went non-finite ends as diverged.

        Args:
          losses: [K, chunk length] per-step losses (or None when the task logs no loss).
          first_step: global step number of losses[:, 0].
          rescue: keep diverged members running (PBT replaces them), unless every member diverged.

        Returns:
          The diverged members kept running for rescue.
        """
        diverged: list[tuple[int, str]] = []
        for i in self.alive():
            member = self.members[i]
            member.writer.write_scalars(step, dict(scalars[i]), progress)
            member.writer.flush()  # the page polls the run store: make the chunk visible now
            bad = None if losses is None else first_nonfinite(np.asarray(losses[i], np.float64).reshape(-1))
            if bad is not None:
                value = float(np.asarray(losses[i]).reshape(-1)[bad])
                diverged.append((i, str(Diverged(first_step + bad, value, member.lr))))
        if rescue and len(diverged) < len(self.alive()):
            return [i for i, _ in diverged]
        for i, message in diverged:
            self.end(i, "diverged", message)
        return []

    def checkpoint(self, step: int, arrays: Any, meta: Callable[[int], Mapping[str, Any]], stacked: bool) -> None:
        """Checkpoint every live member in the single-run layout (member i saves its slice)."""
        savers = [i for i in self.alive() if self.members[i].ckpt is not None]
        host = jax.device_get(arrays) if savers else None  # sync point: one copy out for all members
        for i in savers:
            self.members[i].ckpt.save(step, take(host, i, stacked), meta(i))

    def end(self, i: int, state: str, message: str | None = None, final: Mapping[str, float] | None = None,
            fields: Mapping[str, Any] | None = None) -> None:  # fmt: skip
        """Finish member i: wait for its checkpoint, close its writers and record its end in status.json (its final
        numbers and the end's other `fields`, e.g. their basis where one is no last value: `lifecycle.close_run`)."""
        member = self.members[i]
        member.state, member.message = state, message
        ckpt, member.ckpt = member.ckpt, None
        try:
            if ckpt is not None:
                ckpt.close()
        except Exception as exc:  # noqa: BLE001 - a failed last checkpoint fails the run, with its cause
            member.state, member.message = "failed", f"Saving the checkpoint failed: {describe_error(exc)}"
            state, message = member.state, member.message
        finally:
            if member.run_dir is None:
                member.writer.close(state, message)
            else:
                close_run(member.run_dir, member.writer, state, message, dict(final or {}), fields)
