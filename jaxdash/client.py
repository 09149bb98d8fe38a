"""`jaxdash.init` / `run.log` / `run.finish`: a run of your own loop, in the same run folder as a launched run.

The run folder is written through the same writers as `python -m training` (run store required;
TensorBoard and W&B best-effort, W&B offline unless logged in), so the dashboard shows the run
like any other. Its status follows the script: running, then finished, stopped (`should_stop()`
said so, or SIGTERM), failed (an uncaught exception or a non-zero exit) or, after a kill -9, crashed.

Steps follow W&B's rules (`wandb.sdk.wandb_run.Run._log` and wandb-core's partial history):
`run.step` is the step the next `log` writes; `log(d)` adds `d` to it and commits (the step goes on);
`commit=False` only adds; `log(d, step=s)` with `s` above the current step commits the open row
and opens `s` (not committed: the same step may take more keys), `s` equal merges, `s` below is
dropped with a warning, as is a step outside int64. Nothing logged ever stops the logging after it.
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

from jaxdash.client_files import RunFiles, RunPath, flatten
from jaxdash.fetcher import Fetcher
from jaxdash.log_media import is_media, write_media
from jaxdash.notices import one_line
from jaxdash.row_parts import unstorable
from jaxdash.rows_out import RowsOut
from jaxdash.wandb_config import Config
from jaxdash.wandb_summary import MetricDefs, Summary, final_basis, final_numbers
from runstore import wandb_reads
from runstore.run_folder import RunFolder

logger = logging.getLogger("jaxdash")
INT64_MAX = 2**63 - 1


class Run(RunFiles):
    """One tracked run: `log` metrics, read `should_stop`, then `finish` (or use it as a context manager)."""

    def __init__(self, run_dir: Path, config: Mapping[str, Any], writer: Any, start_step: int, total: int,
                 meta: Mapping[str, Any] | None = None) -> None:  # fmt: skip
        """meta: W&B's attributes of the run (name, project, entity, group, job_type, tags, notes)."""
        meta = dict(meta or {})
        self.dir, self.id, self.name = RunPath(run_dir), run_dir.name, meta.get("name") or run_dir.name
        self.project, self.entity = meta.get("project") or "", meta.get("entity") or ""
        self.group, self.job_type = meta.get("group") or "", meta.get("job_type") or ""
        self.tags, self.notes = tuple(meta.get("tags") or ()), meta.get("notes")
        self.resumed, self.start_time = start_step >= 0, time.time()
        self._step = start_step + 1  # W&B's _step: the next row
        self._stopped = self._finished = False
        self._open: dict[str, Any] | None = None  # the row of step `_step`, being built (commit=False, step=)
        self._defs = MetricDefs()
        self._synced: dict[str, Any] = {}  # step metrics' last values, for rows that lack them (step_sync)
        self._nested: set[str] = set()  # keys logged as nested dicts ("a.b"): a path in the W&B copy's summary
        self._hparams_sent = False
        self.config = Config(config)
        self.config._set_callback(self._config_changed)
        self.summary = Summary(self._logged_summary, self._summary_changed)
        # The rows leave through here: read once computed, in batches, handed to the writers (jaxdash.rows_out).
        self._rows = RowsOut(run_dir, writer, total, start_step, self._defs, self.summary._set)
        if self.resumed:
            self._rows.earlier = wandb_reads.summary(run_dir)
        self._lock = self._rows.lock
        self._fetcher = Fetcher(self._rows.write)
        # Value types `log` accepted before (JAX arrays, floats, NumPy scalars): a call holding only
        # these skips the checks. NumPy arrays are left out (their dtype may be a string's).
        self._plain: set[type] = set()
        self._watches: list[Any] = []  # the console capture and system sampler (jaxdash.session): closed at the end

    @property
    def _writer(self) -> Any:
        """The run's writers (`jaxdash.multihost` wraps them after `init`)."""
        return self._rows.writer

    @_writer.setter
    def _writer(self, writer: Any) -> None:
        self._rows.writer = writer

    @property
    def _summary_dirty(self) -> bool:
        """The script changed `run.summary` since summary.json was last written."""
        return self._rows.summary_due

    @_summary_dirty.setter
    def _summary_dirty(self, due: bool) -> None:
        self._rows.summary_due = due

    # -- the training thread's side: cheap, never waits for the device ------------------------------
    def log(self, data: Mapping[str, Any], step: int | None = None, commit: bool | None = None,
            sync: bool | None = None) -> None:  # fmt: skip
        """Add `data` (numbers, NumPy or JAX arrays, media; nested dicts as "a.b") to the current step, as W&B's.

        step: the step to log to (default: the current one, `run.step`); commit: end the step
        (default: True without `step`, False with it).
        """
        if self._finished:
            logger.warning("jaxdash: log() after finish() of run %s; not logged", self.id)
            return
        if step is not None:
            if type(step) is not int or not self._step <= step <= INT64_MAX:  # the usual case skips the checks
                step = self._to_step(step)
                if step is None:
                    return
            if step > self._step:
                self._commit()
                self._step = step
        if type(data) is dict and self._plain.issuperset(map(type, data.values())):
            values = data  # the per-step case: numbers and arrays of types seen before, ~1 us
        else:
            values = self._checked(data, self._step)
        if self._open is None:
            self._open = dict(values)
        else:
            if not self._open.keys().isdisjoint(values):
                values = self._kept(values)
            self._open.update(values)
        if commit or (commit is None and step is None):
            self._commit()
            self._step += 1

    def _to_step(self, step: Any) -> int | None:
        """`step` as an int the run can store, else None after a warning (W&B raises; logging goes on here)."""
        try:
            value = int(step)
            if value != step:
                raise ValueError
        except (TypeError, ValueError, OverflowError):
            logger.warning("jaxdash: step %r is not an integer; not logged", step)
            return None
        if value > INT64_MAX:
            logger.warning("jaxdash: step %d is past the largest step a run stores (2**63 - 1); not logged", value)
            return None
        if value < self._step:
            logger.warning(
                "jaxdash: Tried to log to step %d that is less than the current step %d (it is before the last "
                "logged step): steps only grow, so this data is not logged",
                value,
                self._step,
            )
            return None
        return value

    def _kept(self, values: dict[str, Any]) -> dict[str, Any]:
        """`values` less those that would replace a value of the open row by one that cannot be stored (a rejected
        value never removes an accepted one of the same step: the row keeps the earlier value, one warning)."""
        out = dict(values)
        for key in self._open.keys() & values.keys():
            why = unstorable(values[key])
            if why is not None:
                del out[key]
                self._fetcher.split.warn(key, f"jaxdash: {key}: {why}; step {self._step} keeps its earlier value")
        return out

    def _commit(self) -> None:
        """Queue the open row (an empty one is only a step: nothing to store)."""
        if self._open:
            self._fetcher.put(self._step, self._open)
        self._open = None

    def _checked(self, data: Any, step: int) -> dict[str, Any]:
        """`data` flattened, media written, non-metrics warned about; remembers the plain value types."""
        if not self._hparams_sent:
            self._send_hparams()
        if not isinstance(data, Mapping):
            logger.warning("jaxdash: log() takes a dict of metrics, got %s; not logged", type(data).__name__)
            return {}
        data = {k if isinstance(k, str) else str(k): v for k, v in data.items()}
        media, data = _split_media(data)
        self._rows.texts.update((k, v) for k, v in media.items() if isinstance(v, str))
        if media:
            try:
                with self._lock:  # batches are written too (by log calls, or the fetch thread)
                    write_media(self._writer, step, media)
            except Exception as exc:  # noqa: BLE001 - a medium that cannot be written never stops logging
                logger.warning("jaxdash: %s at step %d could not be written (%s); not logged", ", ".join(media),
                               step, exc)  # fmt: skip
        values = flatten(data)
        if any(isinstance(v, Mapping) for v in data.values()):
            self._nested.update(k for k in values if k not in data)
        if self._synced or self._defs.defs:
            self._step_sync(values)
        elif not media and values.keys() == data.keys():  # no nesting, nothing left out
            self._plain.update(type(v) for v in values.values() if not isinstance(v, np.ndarray))
        return values

    def _step_sync(self, values: dict[str, Any]) -> None:
        """define_metric(step_metric=..., step_sync): a row without its step metric gets the metric's last value."""
        for key in values.keys() & self._synced.keys():
            self._synced[key] = values[key]
        for key in list(values):
            d = self._defs.find(key)
            metric = d.get("step_metric") if d and d.get("step_sync") else None
            if metric and metric not in values and self._synced.get(metric) is not None:
                values[metric] = self._synced[metric]

    def log_chunk(self, metrics: Mapping[str, Any], first_step: int | None = None) -> None:
        """Queue a chunk's metrics as returned by `lax.scan`: arrays with one row per step (nested dicts as "a/b").

        The in-jit way to log: scan `steps` steps in one jitted call, return their metrics, log them
        once; they are fetched and split into one record per step off this thread.
        """
        values = flatten(metrics, sep="/")
        lengths = {int(np.shape(v)[0]) for v in values.values() if np.ndim(v) >= 1}
        if not values or len(lengths) != 1:
            logger.warning("jaxdash: log_chunk() takes arrays with one shared leading (step) axis; not logged")
            return
        self._commit()
        steps, first = lengths.pop(), self._step if first_step is None else self._to_step(first_step)
        if first is None or first + steps - 1 > INT64_MAX:
            return
        self._fetcher.put(first, values, steps)
        self._step = first + steps

    @property
    def step(self) -> int:
        """The step the next `log` writes (W&B's `run.step`)."""
        return self._step

    def define_metric(self, name: str, step_metric: Any = None, step_sync: bool | None = None,
                      hidden: bool | None = None, summary: str | None = None, goal: str | None = None,
                      overwrite: bool | None = None) -> Any:  # fmt: skip
        """As W&B's: `name` (or a glob such as "val/*") plotted against `step_metric`, its summary ops
        ("min,max", "mean", "first", "last", "none"; "best" with `goal`), hidden or not. Recorded in config.json."""
        found = self._defs.define(name, step_metric, step_sync, hidden, summary, goal, overwrite)
        for metric in self._defs.step_metrics():
            self._synced.setdefault(metric, None)
        self._plain.clear()  # the definition applies from the next log on
        self._persist("define_metric", self._defs.defs)
        for w in getattr(self._writer, "writers", []):
            if hasattr(w, "define_metric"):
                w.define_metric(name, found)  # the W&B copy's own definition
        return _Metric(name, found)

    def should_stop(self) -> bool:
        """True once the dashboard's Stop button (or `python -m training`'s stop file) asked this run to stop."""
        if not self._stopped and RunFolder(self.dir).stop_requested():
            self._stopped = True
        return self._stopped

    def finish(self, exit_code: int | None = None, quiet: bool | None = None) -> None:
        """Write what is queued, close the writers and record the end: finished, stopped or failed."""
        self._end(int(exit_code or 0), None)

    def _end(self, exit_code: int, message: str | None) -> None:
        if self._finished:
            return
        self._finished = self._rows.finishing = True
        if not self._hparams_sent:
            self._send_hparams()
        self._commit()
        self._fetcher.close()
        for watch in self._watches:  # the last output and sample, before the writers close
            watch.close()
        state = "failed" if exit_code else "stopped" if self._stopped else "finished"
        if state == "failed" and not message:
            message = f"The script ended with exit code {exit_code}."
        state, message = self._end_state(state, message)
        if self._fetcher.errors:  # recorded, not the run's state: the script decides that
            self._event("write_failed", f"{self._fetcher.errors} batches could not be written, the last: "
                        f"{type(self._fetcher.error).__name__}: {self._fetcher.error}")  # fmt: skip
        from training.runs.lifecycle import close_run

        summary = self.summary.as_dict()
        # a NaN last value is left to the W&B copy's own history summary: W&B's summary record would say null
        copy = {k: v for k, v in summary.items() if k in self.summary._set or not _is_nan(v)}
        for w in getattr(self._writer, "writers", []):
            if hasattr(w, "write_run_summary"):
                w.write_run_summary(copy, sorted(self._nested))
        basis = final_basis(summary, set(self.summary._set))  # which final numbers are no last value
        close_run(self.dir, self._writer, state, message, final_numbers(summary), {"final_basis": basis})
        self._write_summary(summary)

    def _end_state(self, state: str, message: str | None) -> tuple[str, str | None]:
        """The state and message the run ends with (a multi-host run's may differ: jaxdash.multihost)."""
        return state, message

    @property
    def finished(self) -> bool:
        """True once `finish` ran."""
        return self._finished

    def __enter__(self) -> Run:
        return self

    def __exit__(self, kind: type | None, exc: BaseException | None, tb: Any) -> bool:
        if isinstance(exc, KeyboardInterrupt):
            self._stopped = True
        failed = exc is not None and not isinstance(exc, KeyboardInterrupt)
        self._end(1 if failed else 0, one_line(exc) if failed else None)
        return False

    def _logged_summary(self) -> dict[str, Any]:
        if not self._finished and threading.current_thread() is not self._fetcher.thread:
            self._fetcher.sync()  # W&B's summary holds every row logged so far
        with self._lock:
            return self._rows.logged_summary()


class _Metric:
    """What `define_metric` returns (W&B's `wandb_metric.Metric`): its name and options."""

    def __init__(self, name: str, options: Mapping[str, Any]) -> None:
        self.name, self.step_metric = name, options.get("step_metric")
        self.hidden, self.summary, self.goal = options.get("hidden"), options.get("summary"), options.get("goal")


def _is_nan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)


def _split_media(data: Mapping[str, Any], prefix: str = "") -> tuple[dict[str, Any], dict[str, Any]]:
    """(media under their W&B keys, "a.b" for {"a": {"b": Image}}; `data` without them), as wandb.log finds
    media at any depth of the dict."""
    media: dict[str, Any] = {}
    rest: dict[str, Any] = {}
    for key, value in data.items():
        if is_media(value):
            media[f"{prefix}{key}"] = value
        elif isinstance(value, Mapping) and value:
            inner_media, inner_rest = _split_media(value, f"{prefix}{key}.")
            media.update(inner_media)
            if inner_rest:
                rest[key] = inner_rest
        else:
            rest[key] = value
    return media, rest
