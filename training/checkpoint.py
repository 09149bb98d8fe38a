"""Orbax checkpoints of one run under `<run_dir>/ckpt/<step>/`, and the run-store side of resuming.

A checkpoint holds two items: `arrays` (the train state: params, optimizer state, the shuffle
PRNG key) and `meta` (JSON: where the loop stands - step, epoch, position in the epoch, running
sums - so a resumed run logs exactly the steps and values an uninterrupted one would).
Checkpoints are taken between chunks only, so `step` is always a chunk boundary.

Saves are asynchronous but safe: the state is copied to host memory first (a few MB for these
models, ~10 ms), so the next chunk may donate and overwrite the device buffers while Orbax writes
in its own thread. Orbax commits a checkpoint by renaming its temporary directory, so a process
killed mid-save leaves the previous checkpoint as the latest one.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jax
import orbax.checkpoint as ocp

from training import run_store

log = logging.getLogger(__name__)
KEEP = 2  # the newest and the one before it, in case the newest is being written when a crash hits


class Checkpointer:
    """Saves every `every` steps (at the first chunk end at or past each multiple) and on demand.

    Args:
      run_dir: the run directory; checkpoints go to `run_dir/ckpt`.
      every: steps between periodic checkpoints; 0 = only explicit saves (stop, end of run).
    """

    def __init__(self, run_dir: str | Path, every: int):
        self.directory = Path(run_dir).absolute() / "ckpt"
        self.every = every
        options = ocp.CheckpointManagerOptions(max_to_keep=KEEP, create=True, cleanup_tmp_directories=True)
        self.manager = ocp.CheckpointManager(self.directory, options=options, item_names=("arrays", "meta"))
        self._last = self.manager.latest_step()

    @property
    def latest_step(self) -> int | None:
        """Step of the newest complete checkpoint, or None."""
        return self.manager.latest_step()

    def due(self, step: int) -> bool:
        """True when `step` is the first chunk end at or past a multiple of `every` since the last save."""
        return self.every > 0 and step // self.every > (self._last or 0) // self.every

    def save(self, step: int, arrays: Any, meta: Mapping[str, Any]) -> None:
        """Checkpoint `arrays` (any pytree of jax/numpy arrays) and JSON `meta` as `step`."""
        if step == self.manager.latest_step():
            return  # e.g. a stop request right after a periodic save at the same step
        host = jax.device_get(arrays)  # sync point: copy out before the next chunk reuses the buffers
        self.manager.save(
            step, args=ocp.args.Composite(arrays=ocp.args.StandardSave(host), meta=ocp.args.JsonSave(dict(meta))), force=True
        )
        self._last = step

    def maybe_save(self, step: int, arrays: Any, meta: Mapping[str, Any], force: bool = False) -> bool:
        """Save when `due(step)` or `force`; returns whether it saved."""
        if force or self.due(step):
            self.save(step, arrays, meta)
            return True
        return False

    def restore(self, like: Any, step: int | None = None) -> tuple[Any, dict[str, Any]]:
        """(arrays, meta) of checkpoint `step` (default: the latest), laid out like `like`.

        `like` is a pytree of the same structure (e.g. a freshly initialised state); the restored
        arrays get its shapes, dtypes and shardings, so a run resumes on whatever devices it has now.
        """
        step = self.manager.latest_step() if step is None else step
        if step is None:
            raise FileNotFoundError(f"no checkpoint in {self.directory}")
        abstract = jax.tree.map(ocp.utils.to_shape_dtype_struct, like)
        out = self.manager.restore(
            step, args=ocp.args.Composite(arrays=ocp.args.StandardRestore(abstract), meta=ocp.args.JsonRestore())
        )
        self._last = step
        return out["arrays"], dict(out["meta"])

    def close(self) -> None:
        """Wait for a save in flight, then release Orbax's threads."""
        self.manager.wait_until_finished()
        self.manager.close()


def latest_step(run_dir: str | Path) -> int | None:
    """Newest complete checkpoint step of a run, read from the directory names (no JAX, no Orbax)."""
    ckpt = Path(run_dir) / "ckpt"
    # An unfinished save lives in "<step>.orbax-checkpoint-tmp-*" until Orbax renames it.
    return max((int(p.name) for p in ckpt.iterdir() if p.name.isdigit()), default=None) if ckpt.is_dir() else None


def truncate_metrics(run_dir: str | Path, step: int) -> int:
    """Drop metrics.jsonl records past `step` (logged after the checkpoint a run resumes from).

    Returns how many records were dropped. The file is replaced atomically, so a dashboard
    polling it sees the old or the new file (its byte offset is reset by the shorter file).
    """
    path = Path(run_dir) / "metrics.jsonl"
    records, _ = run_store.read_metrics(Path(run_dir))
    keep = [r for r in records if int(r.get("step", 0)) <= step]
    if len(keep) != len(records):
        tmp = path.with_name(f".{path.name}.resume.tmp")
        with open(tmp, "w") as f:
            f.writelines(json.dumps(r, allow_nan=False) + "\n" for r in keep)
            f.flush()
            os.fsync(f.fileno())
        tmp.replace(path)
    return len(records) - len(keep)
