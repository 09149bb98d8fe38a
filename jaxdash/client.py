"""`jaxdash.init` / `run.log` / `run.finish`: a run of your own loop, in the same run folder as a launched run.

The run folder is written through the same writers as `python -m training` (run store required;
TensorBoard and W&B best-effort, W&B offline unless logged in), so the dashboard shows the run
like any other: Live, compare, detail, the TensorBoard button, the W&B sync command. Its status
follows the process: running, then finished, stopped (after `should_stop()` said so), failed (an
uncaught exception, its last line as the message) or, after a kill -9, crashed (the pid is gone).
"""

from __future__ import annotations

import atexit
import logging
import os
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from jaxdash.fetcher import Fetcher
from runstore import run_store, safe_files
from training.writers.base import Progress

logger = logging.getLogger("jaxdash")
FLUSH_S = 0.25  # writers flush at most this often (each flush appends metrics.jsonl and rewrites status.json)
_CURRENT: Run | None = None


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
        self._fetcher = Fetcher(self._write_rows)

    # -- the training thread's side: cheap, never waits for the device ------------------------------
    def log(self, metrics: Mapping[str, Any], step: int | None = None, commit: bool = True) -> None:
        """Queue `metrics` (numbers, NumPy or JAX arrays; nested dicts flatten with "/") for `step`.

        step: the global step; default: one past the last logged step. A step below the last one
        is dropped with a warning (the charts' x axis only grows).
        """
        if self._finished:
            logger.warning("jaxdash: log() after finish() of run %s; not logged", self.id)
            return
        if not isinstance(metrics, Mapping):
            logger.warning("jaxdash: log() takes a dict of metrics, got %s; not logged", type(metrics).__name__)
            return
        if step is None:
            step = self._step + 1 if commit else max(self._step, 0)
        elif step < self._step:
            logger.warning("jaxdash: step %s is before the last logged step %s; not logged", step, self._step)
            return
        values = _flatten(metrics)
        if not values:
            return
        if self._open is not None and self._open[0] == step:  # the same step again: one record, as in W&B
            self._open[1].update(values)
            return
        if self._open is not None:
            self._fetcher.put(*self._open)
        self._step, self._open = int(step), (int(step), values)

    def should_stop(self) -> bool:
        """True once the dashboard's Stop button (or `python -m training`'s stop file) asked this run to stop."""
        if not self._stopped and run_store.stop_requested(self.dir):
            self._stopped = True
        return self._stopped

    def finish(self, exit_code: int = 0, message: str | None = None) -> None:
        """Write what is queued, close the writers and record the end: finished, stopped or failed."""
        global _CURRENT
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

        final = {k: float(v) for k, v in self.summary.items() if isinstance(v, (int, float))}
        close_run(self.dir, self._writer, state, message, final)
        if _CURRENT is self:
            _CURRENT = None

    def __enter__(self) -> Run:
        return self

    def __exit__(self, kind: type | None, exc: BaseException | None, tb: Any) -> None:
        if isinstance(exc, KeyboardInterrupt):
            self._stopped = True
        failed = exc is not None and not isinstance(exc, KeyboardInterrupt)
        self.finish(1 if failed else 0, _one_line(exc) if failed else None)

    # -- the fetcher thread's side -------------------------------------------------------------------
    def _write_rows(self, rows: list[tuple[int, dict[str, float], dict[str, np.ndarray]]]) -> None:
        """Hand fetched steps to the writers; flush at most every FLUSH_S (and for the last batch)."""
        with self._lock:
            wall = time.monotonic() - self._t0
            rate = (
                (rows[-1][0] - self._rate_from[0]) / (wall - self._rate_from[1]) if wall > self._rate_from[1] else None
            )
            self._rate_from = (rows[-1][0], wall)
            for step, scalars, histograms in rows:
                progress = Progress(step=step, total_steps=self._total, wall_seconds=wall, steps_per_sec=rate)
                if scalars:
                    self._writer.write_scalars(step, scalars, progress)
                if histograms:
                    self._writer.write_histograms(step, histograms)
            if time.monotonic() - self._last_flush >= FLUSH_S or self._finished:
                self._writer.flush()
                self._last_flush = time.monotonic()


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


def current() -> Run | None:
    """The run `init` made last and that has not finished."""
    return _CURRENT


def init(
    project: str | None = None,
    name: str | None = None,
    config: Mapping[str, Any] | None = None,
    group: str | None = None,
    tags: tuple[str, ...] | list[str] = (),
    notes: str | None = None,
    runs_root: str | os.PathLike | None = None,
    tensorboard: bool = True,
    wandb: str = "auto",
    resume: str | None = None,
    id: str | None = None,  # noqa: A002 - wandb's name for it
    total_steps: int | None = None,
) -> Run:
    """Start (or with `resume="allow"` and `id`, continue) a run in `<runs_root>/<id>/` and return it.

    runs_root: default $JAXDASH_RUNS, else ./runs (where the dashboard looks). wandb: "auto"
    (online when logged in, else offline), "online", "offline" or "disabled". total_steps: for the
    page's progress bar and ETA. Raises ValueError for an id that is not a plain folder name, an
    existing id without `resume`, or `resume="must"` of a run that does not exist.
    """
    global _CURRENT
    if _CURRENT is not None:
        _CURRENT.finish()
    run_dir, start_step = _run_dir(run_store.runs_root(runs_root), project or "script", name, id, resume)
    cfg = dict(config or {})
    if start_step < 0:
        extra = {"group": group} if group else {}
        run_store.write_config(run_dir, project or "script", cfg, name=name, command=list(sys.argv), **extra)
    else:
        cfg = {**(run_store.read_json(run_dir / "config.json", {}) or {}).get("config", {}), **cfg}
    run_store.start_status(run_dir, total_steps or 0, **({"group": group} if group else {}))
    if start_step >= 0:
        run_store.write_status(run_dir, resumed_from=start_step, resumed_at=time.time())
    writer = _writers(run_dir, cfg, name, wandb, tensorboard, start_step, group, project, tags, notes)
    _CURRENT = Run(run_dir, name or run_dir.name, cfg, writer, start_step, total_steps or 0)
    _install_hooks()
    return _CURRENT


def _run_dir(root: Path, project: str, name: str | None, run_id: str | None, resume: str | None) -> tuple[Path, int]:
    """(the run folder, the last step it logged: -1 for a new run)."""
    if run_id is None:
        if resume == "must":
            raise ValueError("jaxdash.init(resume='must') needs the id of the run to continue")
        return run_store.new_run_dir(root, project, name), -1
    if not safe_files.plain_name(run_id):
        raise ValueError(f"jaxdash.init: id {run_id!r} must be a plain folder name (letters, digits, . _ -)")
    run_dir = root / run_id
    if (run_dir / "config.json").exists():
        if resume not in ("allow", "must", True):
            raise ValueError(f"jaxdash.init: run {run_id} exists in {root}; pass resume='allow' to continue it")
        steps = [int(r.get("step", 0)) for r in run_store.read_metrics(run_dir)[0]]
        return run_dir, max(steps, default=0)
    if resume == "must":
        raise ValueError(f"jaxdash.init(resume='must'): no run {run_id} in {root}")
    run_dir.mkdir(parents=True, exist_ok=True)
    return run_dir, -1


def _writers(run_dir, cfg, name, wandb, tensorboard, start_step, group, project, tags, notes) -> Any:  # noqa: ANN001
    """The run's writers: the run store here; TensorBoard and W&B in a niced writer process (jaxdash/sink.py).

    Their info (TensorBoard logdir, W&B mode, url and sync command) is published in status.json.
    """
    from jaxdash.sink import SinkWriter
    from training.writers.base import MultiWriter, Tracking
    from training.writers.build import build_writer

    if project:
        os.environ.setdefault("WANDB_PROJECT", project)  # what the W&B writer reads (the sink inherits it)
    if tags:
        os.environ.setdefault("WANDB_TAGS", ",".join(tags))
    if notes:
        os.environ.setdefault("WANDB_NOTES", notes)
    resume_step = start_step if start_step >= 0 else None
    here = Tracking("disabled", tensorboard=False, console=False, group=group, job_type=project)
    writer, info = build_writer(run_dir, cfg, name=name, tracking=here, resume_step=resume_step)
    run_store.write_status(run_dir, **info)
    if tensorboard or wandb != "disabled":
        there = Tracking(wandb, tensorboard, console=False, group=group, job_type=project, run_store=False)
        publish = lambda found: run_store.write_status(run_dir, **found)  # noqa: E731
        writer = MultiWriter([*writer.writers, SinkWriter(run_dir, cfg, name, there, resume_step, publish)])
    if start_step < 0:
        writer.write_hparams(cfg)
    return writer


_HOOKED = False


def _install_hooks() -> None:
    """Record the end of the run however the script ends: normally (atexit) or by an uncaught exception."""
    global _HOOKED
    if _HOOKED:
        return
    _HOOKED = True
    previous = sys.excepthook

    def on_uncaught(kind: type[BaseException], exc: BaseException, tb: Any) -> None:
        if _CURRENT is not None:
            if isinstance(exc, KeyboardInterrupt):
                _CURRENT._stopped = True
                _CURRENT.finish(0)
            else:
                _CURRENT.finish(1, _one_line(exc))
        previous(kind, exc, tb)

    sys.excepthook = on_uncaught
    atexit.register(lambda: _CURRENT.finish() if _CURRENT is not None else None)


def log(metrics: Mapping[str, Any], step: int | None = None, commit: bool = True) -> None:
    """`run.log` of the current run (as `wandb.log`)."""
    if _CURRENT is None:
        raise RuntimeError("jaxdash.log() before jaxdash.init()")
    _CURRENT.log(metrics, step=step, commit=commit)


def finish(exit_code: int = 0) -> None:
    """`run.finish` of the current run, if any (as `wandb.finish`)."""
    if _CURRENT is not None:
        _CURRENT.finish(exit_code)
