"""`jaxdash.init` / `run.log` / `run.finish`: a run of your own loop, in the same run folder as a launched run.

The run folder is written through the same writers as `python -m training` (run store required;
TensorBoard and W&B best-effort, W&B offline unless logged in), so the dashboard shows the run
like any other: Live, compare, detail, the TensorBoard button, the W&B sync command. Its status
follows the process: running, then finished, stopped (after `should_stop()` said so), failed (an
uncaught exception, its last line as the message) or, after a kill -9, crashed (the pid is gone).
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from jaxdash.fetcher import Block, Fetcher, Histograms
from jaxdash.media import is_media, write_media
from runstore import run_store
from training.writers.base import Progress

logger = logging.getLogger("jaxdash")
FLUSH_S = 0.25  # writers flush at most this often (each flush appends metrics.jsonl and rewrites status.json)


class Run:
    """One tracked run: `log` metrics, read `should_stop`, then `finish` (or use it as a context manager)."""

    def __init__(self, run_dir: Path, name: str, config: dict[str, Any], writer: Any, start_step: int, total: int):
        self.dir, self.id, self.name = run_dir, run_dir.name, name
        self.config = dict(config)
        self.summary: dict[str, Any] = {}
        self._writer, self._total = writer, total
        self._step, self._t0, self._last_flush = start_step, time.monotonic(), 0.0
        self._rate_from = (max(start_step, 0), 0.0)  # (step, wall seconds) the steps/s shown counts from
        self._stopped = self._finished = False
        self._open: tuple[int, dict[str, Any]] | None = None  # the step being logged, queued once the next begins
        self._lock = threading.Lock()
        self._summaries: dict[str, str] = {}  # define_metric(name, summary=...): "min", "max", "mean" or "last"
        self._stats: dict[str, list[float]] = {}  # name -> [last, min, max, sum, count] of the logged values
        self._fetcher = Fetcher(self._write_rows)
        # Value types `log` accepted before (JAX arrays, floats, NumPy scalars): a call holding only
        # these skips the checks. NumPy arrays are left out (their dtype may be a string's).
        self._plain: set[type] = set()

    # -- the training thread's side: cheap, never waits for the device ------------------------------
    def log(self, metrics: Mapping[str, Any], step: int | None = None, commit: bool = True) -> None:
        """Queue `metrics` (numbers, NumPy or JAX arrays; nested dicts flatten with "/") for `step`.

        step: the global step; default: one past the last logged step. A step below the last one
        is dropped with a warning (the charts' x axis only grows).
        """
        if self._finished:
            logger.warning("jaxdash: log() after finish() of run %s; not logged", self.id)
            return
        if step is None:
            step = self._step + 1 if commit else max(self._step, 0)
        elif step < self._step:
            logger.warning("jaxdash: step %s is before the last logged step %s; not logged", step, self._step)
            return
        if type(metrics) is dict and all(type(v) in self._plain for v in metrics.values()):
            values = dict(metrics)  # the per-step case: numbers and arrays of types seen before, ~1 us
        else:
            values = self._checked(metrics, int(step))
        if not values:
            return
        if self._open is not None and self._open[0] == step:  # the same step again: one record, as in W&B
            self._open[1].update(values)
            return
        if self._open is not None:
            self._fetcher.put(*self._open)
        self._step, self._open = int(step), (int(step), values)

    def _checked(self, metrics: Any, step: int) -> dict[str, Any]:
        """`metrics` flattened, media written, non-metrics warned about; remembers the plain value types."""
        if not isinstance(metrics, Mapping):
            logger.warning("jaxdash: log() takes a dict of metrics, got %s; not logged", type(metrics).__name__)
            return {}
        media = {k: v for k, v in metrics.items() if is_media(v)}
        if media:
            with self._lock:  # the fetch thread writes too
                write_media(self._writer, step, media)
        values = _flatten({k: v for k, v in metrics.items() if k not in media})
        if not media and values.keys() == metrics.keys():  # no nesting, nothing left out
            self._plain.update(type(v) for v in values.values() if not isinstance(v, np.ndarray))
        return values

    def log_chunk(self, metrics: Mapping[str, Any], first_step: int | None = None) -> None:
        """Queue a chunk's metrics as returned by `lax.scan`: arrays with one row per step.

        The in-jit way to log: scan `steps` steps in one jitted call, return their metrics, log them
        once; they are fetched and split into one record per step off this thread.
        """
        values = _flatten(metrics)
        lengths = {int(np.shape(v)[0]) for v in values.values() if np.ndim(v) >= 1}
        if not values or len(lengths) != 1:
            logger.warning("jaxdash: log_chunk() takes arrays with one shared leading (step) axis; not logged")
            return
        steps, first = lengths.pop(), self._step + 1 if first_step is None else int(first_step)
        if first <= self._step:
            logger.warning(
                "jaxdash: chunk from step %s is not after the last logged step %s; not logged", first, self._step
            )
            return
        if self._open is not None:
            self._fetcher.put(*self._open)
            self._open = None
        self._fetcher.put(first, values, steps)
        self._step = first + steps - 1

    def define_metric(self, name: str, step_metric: str | None = None, summary: str | None = None) -> None:
        """As wandb's: `summary` ("min", "max", "mean" or "last") picks the value the run's summary keeps."""
        if summary is not None:
            if summary not in ("min", "max", "mean", "last"):
                raise ValueError(f"jaxdash.define_metric({name!r}): summary must be min, max, mean or last")
            self._summaries[name] = summary

    def should_stop(self) -> bool:
        """True once the dashboard's Stop button (or `python -m training`'s stop file) asked this run to stop."""
        if not self._stopped and run_store.stop_requested(self.dir):
            self._stopped = True
        return self._stopped

    def finish(self, exit_code: int = 0, message: str | None = None) -> None:
        """Write what is queued, close the writers and record the end: finished, stopped or failed."""
        if self._finished:
            return
        self._finished = True
        if self._open is not None:
            self._fetcher.put(*self._open)
        self._fetcher.close()
        state = "failed" if exit_code else "stopped" if self._stopped else "finished"
        if self._fetcher.error is not None:
            state, message = "failed", f"Logging failed: {_one_line(self._fetcher.error)}"
        if state == "failed" and not message:
            message = f"The script ended with exit code {exit_code}."
        from training.runs.lifecycle import close_run

        final = {**self._summary_values(), **self.summary}
        final = {k: float(v) for k, v in final.items() if isinstance(v, (int, float))}
        close_run(self.dir, self._writer, state, message, final)

    @property
    def finished(self) -> bool:
        """True once `finish` ran."""
        return self._finished

    def __enter__(self) -> Run:
        return self

    def __exit__(self, kind: type | None, exc: BaseException | None, tb: Any) -> None:
        if isinstance(exc, KeyboardInterrupt):
            self._stopped = True
        failed = exc is not None and not isinstance(exc, KeyboardInterrupt)
        self.finish(1 if failed else 0, _one_line(exc) if failed else None)

    def _summary_values(self) -> dict[str, float]:
        """Each logged metric's summary: its last value, or what define_metric asked for."""
        out = {}
        with self._lock:
            for name, (last, low, high, total, count) in self._stats.items():
                pick = self._summaries.get(name, "last") if count else "last"  # only NaN seen: the last
                out[name] = {"last": last, "min": low, "max": high, "mean": total / max(count, 1)}[pick]
        return out

    # -- the fetcher thread's side -------------------------------------------------------------------
    def _write_rows(self, parts: list[Block | Histograms]) -> None:
        """Hand fetched blocks to the writers (one Progress, on the batch's last step); flush at most every FLUSH_S."""
        with self._lock:
            wall = time.monotonic() - self._t0
            last = max((int(p.steps[-1]) if isinstance(p, Block) else p[0] for p in parts), default=self._rate_from[0])
            rate = (last - self._rate_from[0]) / (wall - self._rate_from[1]) if wall > self._rate_from[1] else None
            self._rate_from = (last, wall)
            progress = Progress(step=last, total_steps=self._total, wall_seconds=wall, steps_per_sec=rate)
            final = max((i for i, p in enumerate(parts) if isinstance(p, Block)), default=-1)
            for i, part in enumerate(parts):
                if isinstance(part, Block):
                    self._writer.write_scalar_rows(part.steps, part.columns, progress if i == final else None)
                    self._note(part.columns)
                else:
                    self._writer.write_histograms(*part)
            if time.monotonic() - self._last_flush >= FLUSH_S or self._finished:
                self._writer.flush()
                self._last_flush = time.monotonic()

    def _note(self, columns: Mapping[str, np.ndarray]) -> None:
        """Each tag's last value, and min, max, sum and count of its values that are not NaN (for the summary)."""
        for name, column in columns.items():
            seen = column[~np.isnan(column)]
            st = self._stats.setdefault(name, [math.nan, math.inf, -math.inf, 0.0, 0])
            st[0] = float(column[-1])
            if seen.size:
                st[1], st[2] = min(st[1], float(seen.min())), max(st[2], float(seen.max()))
                st[3], st[4] = st[3] + float(seen.sum()), st[4] + int(seen.size)


_WARNED: set[str] = set()


def _flatten(metrics: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """{"a": {"b": x}} -> {"a/b": x}; strings, None and other non-numbers are left out (one warning per key)."""
    out: dict[str, Any] = {}
    for key, value in metrics.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(_flatten(value, f"{name}/"))
        elif isinstance(value, (bool, str, bytes)) or value is None or not _numeric(value):
            if name not in _WARNED:
                _WARNED.add(name)
                kind = type(value).__name__
                logger.warning("jaxdash: %s: %s is no metric (a number or an array); not logged", name, kind)
        else:
            out[name] = value
    return out


def _numeric(value: Any) -> bool:
    if isinstance(value, (int, float)):
        return True
    dtype = getattr(value, "dtype", None)  # NumPy and JAX arrays: no device sync to read the dtype
    return dtype is not None and np.dtype(dtype).kind in "biuf"


def _one_line(exc: BaseException | None) -> str:
    text = f"{type(exc).__name__}: {exc}" if exc is not None else ""
    return (text.strip().splitlines() or [""])[-1][:500]
