"""Orbax checkpoints of one run under `<run_dir>/ckpt/<step>/`, and the run-store side of resuming.

A checkpoint holds two items: `arrays` (the train state: params, optimizer state, the shuffle
PRNG key) and `meta` (JSON: where the loop stands - step, epoch, position in the epoch, running
sums - so a resumed run logs exactly the steps and values an uninterrupted one would).
Checkpoints are taken between chunks only, so `step` is always a chunk boundary.

Saves are asynchronous but safe: the state is copied to host memory first (a few MB for these
models, ~10 ms), so the next chunk may donate and overwrite the device buffers. Everything after
the copy runs on the process's one Orbax thread: Orbax's save call itself takes ~30 ms even for a
small state (directories, metadata, its own threads), which the training thread no longer waits
for (a sweep's population saved 6 times, ~0.2 s of a 1.3 s trial). Orbax commits a checkpoint by
renaming its temporary directory, so a process killed mid-save leaves the previous checkpoint as
the latest one. A failed save surfaces at the next save, or at `close`.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import jax
import numpy as np
import orbax.checkpoint as ocp

from runstore.run_folder import RunFolder

log = logging.getLogger(__name__)
# Orbax logs a failed background save with its whole traceback through absl before raising it to us;
# the run reports the error itself, in one line (e.g. "No space left on device writing .../ckpt/400").
logging.getLogger("absl").setLevel(logging.CRITICAL)


def _quiet_closed_loop(previous: Callable[[Any], None]) -> Callable[[Any], None]:
    """`sys.unraisablehook` less TensorStore's late callbacks of a failed save: Orbax stops awaiting the
    other writes once one fails (a full disk) and closes its event loop; each write that ends later calls
    the closed loop's `call_soon_threadsafe`, whose RuntimeError was printed as a traceback (four on a
    full disk). The failed save itself reaches the run as one line."""

    def hook(unraisable: Any) -> None:
        exc, tb = unraisable.exc_value, unraisable.exc_traceback
        frames = []
        while tb is not None:
            frames.append(tb.tb_frame.f_code.co_name)
            tb = tb.tb_next
        if isinstance(exc, RuntimeError) and str(exc) == "Event loop is closed" and "call_soon_threadsafe" in frames:
            log.debug("a checkpoint write ended after its save failed (its event loop was closed)")
            return
        previous(unraisable)

    return hook


sys.unraisablehook = _quiet_closed_loop(sys.unraisablehook)
KEEP = 2  # the newest and the one before it, in case the newest is being written when a crash hits
# Every Orbax call of the process, in order, on one thread: Orbax's save signalling is not made for
# managers saving from several threads at once (three members' saves from three threads hung).
_ORBAX = ThreadPoolExecutor(max_workers=1, thread_name_prefix="orbax")


def _on_orbax_thread(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """`fn(*args, **kwargs)` on the Orbax thread, after the saves handed to it before; its result."""
    return _ORBAX.submit(fn, *args, **kwargs).result()


def _frozen(leaf: Any) -> Any:
    """A host array the caller cannot change while the save is pending.

    `jax.device_get` gives read-only arrays (JAX keeps them intact even when their device buffer
    is donated); a writable NumPy array is the caller's own, so it is copied.
    """
    return leaf.copy() if isinstance(leaf, np.ndarray) and leaf.flags.writeable else leaf


class Checkpointer:
    """Saves when asked (the engine's schedule, training/engine/schedule.py, decides when) and restores.

    Args:
      run_dir: the run directory; checkpoints go to `run_dir/ckpt`.
      resume_step: the checkpoint a resumed run starts from (see `resume_point`); None for a fresh run.
    """

    def __init__(self, run_dir: str | Path, resume_step: int | None = None):
        self.directory = RunFolder(Path(run_dir).absolute()).checkpoints
        self.resume_step = resume_step
        self._pending: Future | None = None  # the save handed to the Orbax thread last
        self.manager = _on_orbax_thread(self._open)

    def _open(self) -> ocp.CheckpointManager:
        options = ocp.CheckpointManagerOptions(max_to_keep=KEEP, create=True, cleanup_tmp_directories=True)
        manager = ocp.CheckpointManager(self.directory, options=options, item_names=("arrays", "meta"))
        for step in manager.all_steps():
            if self.resume_step is not None and step > self.resume_step:
                manager.delete(step)  # ahead of the logged metrics: its steps will be trained again
        return manager

    @property
    def latest_step(self) -> int | None:
        """Step of the newest complete checkpoint, or None (after the saves handed over so far)."""
        self._wait()
        return _on_orbax_thread(self.manager.latest_step)

    def save(self, step: int, arrays: Any, meta: Mapping[str, Any]) -> None:
        """Checkpoint `arrays` (any pytree of jax/numpy arrays) and JSON `meta` as `step`.

        Returns once the arrays are on the host and handed to the Orbax thread; raises the error of
        the previous save if it failed.
        """
        self._wait()  # the previous save (long done, normally): its error surfaces here, in the training thread
        host = jax.tree.map(_frozen, jax.device_get(arrays))  # sync point: before the next chunk reuses the buffers
        self._pending = _ORBAX.submit(self._save_now, step, host, dict(meta))

    def _save_now(self, step: int, host: Any, meta: dict[str, Any]) -> None:
        """On the Orbax thread: hand the host copy to Orbax (which writes it in its own threads)."""
        if step == self.manager.latest_step():
            return  # e.g. a stop request right after a periodic save at the same step
        args = ocp.args.Composite(arrays=ocp.args.StandardSave(host), meta=ocp.args.JsonSave(meta))
        try:  # a failed background save of an earlier step surfaces here too
            self.manager.save(step, args=args, force=True)
        except OSError as exc:
            raise OSError(exc.errno, exc.strerror, str(self.directory)) from exc

    def _wait(self) -> None:
        """Wait for the save handed to the Orbax thread last; re-raise its error if it failed."""
        pending, self._pending = self._pending, None
        if pending is not None:
            pending.result()

    def restore(self, like: Any, step: int | None = None) -> tuple[Any, dict[str, Any]]:
        """(arrays, meta) of checkpoint `step` (default: `resume_step`, else the latest), laid out like `like`.

        `like` is a pytree of the same structure (e.g. a freshly initialised state); the restored
        arrays get its shapes, dtypes and shardings, so a run resumes on whatever devices it has now.
        """
        step = step if step is not None else self.resume_step if self.resume_step is not None else self.latest_step
        if step is None:
            raise FileNotFoundError(f"no checkpoint in {self.directory}")
        self._wait()
        abstract = jax.tree.map(ocp.utils.to_shape_dtype_struct, like)
        args = ocp.args.Composite(arrays=ocp.args.StandardRestore(abstract), meta=ocp.args.JsonRestore())
        out = _on_orbax_thread(self.manager.restore, step, args=args)
        return out["arrays"], dict(out["meta"])

    def close(self) -> None:
        """Wait for the saves in flight, then release Orbax's threads (re-raises a failed save)."""
        try:
            self._wait()
            _on_orbax_thread(self.manager.wait_until_finished)
        except OSError as exc:
            raise OSError(exc.errno, exc.strerror, str(self.directory)) from exc
        finally:
            _on_orbax_thread(self.manager.close)


def checkpoint_steps(run_dir: str | Path) -> list[int]:
    """Steps of the complete checkpoints of a run, ascending (RunFolder.checkpoint_steps: no JAX, no Orbax)."""
    return RunFolder(run_dir).checkpoint_steps()


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
    logged = max((int(r.get("step", 0)) for r in RunFolder(run_dir).records()[0]), default=0)
    return max((s for s in checkpoint_steps(run_dir) if s <= logged), default=None)


def truncate_metrics(run_dir: str | Path, step: int) -> int:
    """Drop metrics.jsonl records past `step` (logged after the checkpoint a run resumes from).

    Returns how many records were dropped. The file is replaced atomically, so a dashboard
    polling it sees the old or the new file (its byte offset is reset by the shorter file).
    """
    folder = RunFolder(run_dir)
    records, _ = folder.records()
    keep = [r for r in records if int(r.get("step", 0)) <= step]
    if len(keep) != len(records):
        folder.replace_records(keep)
    return len(records) - len(keep)
