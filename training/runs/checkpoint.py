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

from runstore import run_store

log = logging.getLogger(__name__)
# Orbax logs a failed background save with its whole traceback through absl before raising it to us;
# the run reports the error itself, in one line (e.g. "No space left on device writing .../ckpt/400").
logging.getLogger("absl").setLevel(logging.CRITICAL)
KEEP = 2  # the newest and the one before it, in case the newest is being written when a crash hits


class Checkpointer:
    """Saves every `every` steps (at the first chunk end at or past each multiple) and on demand.

    Args:
      run_dir: the run directory; checkpoints go to `run_dir/ckpt`.
      every: steps between periodic checkpoints; 0 = only explicit saves (stop, end of run).
      resume_step: the checkpoint a resumed run starts from (see `resume_point`); None for a fresh run.
    """

    def __init__(self, run_dir: str | Path, every: int, resume_step: int | None = None):
        self.directory = Path(run_dir).absolute() / "ckpt"
        self.every = every
        self.resume_step = resume_step
        options = ocp.CheckpointManagerOptions(max_to_keep=KEEP, create=True, cleanup_tmp_directories=True)
        self.manager = ocp.CheckpointManager(self.directory, options=options, item_names=("arrays", "meta"))
        self._last = resume_step
        for step in self.manager.all_steps():
            if resume_step is not None and step > resume_step:
                self.manager.delete(step)  # ahead of the logged metrics: its steps will be trained again

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
        args = ocp.args.Composite(arrays=ocp.args.StandardSave(host), meta=ocp.args.JsonSave(dict(meta)))
        try:  # a failed background save of an earlier step surfaces here too
            self.manager.save(step, args=args, force=True)
        except OSError as exc:
            raise OSError(exc.errno, exc.strerror, str(self.directory)) from exc
        self._last = step

    def maybe_save(self, step: int, arrays: Any, meta: Mapping[str, Any], force: bool = False) -> bool:
        """Save when `due(step)` or `force`; returns whether it saved."""
        if force or self.due(step):
            self.save(step, arrays, meta)
            return True
        return False

    def restore(self, like: Any, step: int | None = None) -> tuple[Any, dict[str, Any]]:
        """(arrays, meta) of checkpoint `step` (default: `resume_step`, else the latest), laid out like `like`.

        `like` is a pytree of the same structure (e.g. a freshly initialised state); the restored
        arrays get its shapes, dtypes and shardings, so a run resumes on whatever devices it has now.
        """
        step = step if step is not None else self.resume_step if self.resume_step is not None else self.latest_step
        if step is None:
            raise FileNotFoundError(f"no checkpoint in {self.directory}")
        abstract = jax.tree.map(ocp.utils.to_shape_dtype_struct, like)
        out = self.manager.restore(
            step, args=ocp.args.Composite(arrays=ocp.args.StandardRestore(abstract), meta=ocp.args.JsonRestore())
        )
        self._last = step
        return out["arrays"], dict(out["meta"])

    def close(self) -> None:
        """Wait for a save in flight, then release Orbax's threads (re-raises a failed save)."""
        try:
            self.manager.wait_until_finished()
        except OSError as exc:
            raise OSError(exc.errno, exc.strerror, str(self.directory)) from exc
        finally:
            self.manager.close()


def checkpoint_steps(run_dir: str | Path) -> list[int]:
    """Steps of the complete checkpoints of a run, ascending, from the directory names (no JAX, no Orbax)."""
    ckpt = Path(run_dir) / "ckpt"
    # An unfinished save lives in "<step>.orbax-checkpoint-tmp-*" until Orbax renames it.
    return sorted(int(p.name) for p in ckpt.iterdir() if p.name.isdigit()) if ckpt.is_dir() else []


def latest_step(run_dir: str | Path) -> int | None:
    """Newest complete checkpoint step of a run, or None."""
    return max(checkpoint_steps(run_dir), default=None)


def resume_point(run_dir: str | Path) -> int | None:
    """The checkpoint to resume from: the newest one whose step's metrics reached metrics.jsonl.

    The run store writes a chunk's records on a background thread while the next chunk runs, so
    a kill can land after a checkpoint was committed but before its step's record was: resuming
    from that checkpoint would leave the step missing. The previous checkpoint (two are kept)
    re-logs it instead.
    """
    logged = max((int(r.get("step", 0)) for r in run_store.read_metrics(Path(run_dir))[0]), default=0)
    return max((s for s in checkpoint_steps(run_dir) if s <= logged), default=None)


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
