"""A client run's rows, from their batches to the writers: the step after `jaxdash.fetcher`, never back.

`Run.log` queues values (`jaxdash.client`); `jaxdash.fetcher.Fetcher` takes them off
the device in batches and hands each batch, as blocks of scalar columns and per-step histograms, to
`RowsOut.write`. It hands them on to the run's writers (`runwriters.base.MultiWriter`: the run
store first, then TensorBoard and W&B) with one `Progress` for the batch, flushes at most every FLUSH_S,
and keeps what W&B's summary needs of the rows (each key's last, min, max, sum, count, first value), so
the run's summary.json is written here too when the script changed the summary since the last flush.
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

from jaxdash.row_parts import Block, Part, Values
from jaxdash.wandb_summary import MetricDefs, summary_of
from runstore import media_store
from runstore.run_folder import RunFolder
from runwriters.base import Progress

logger = logging.getLogger("jaxdash")
FLUSH_S = 0.2  # writers flush at most this often (each flush appends metrics.jsonl and rewrites status.json),
# about one of every four of the fetcher's writes (WRITE_S) while a script logs


class RowsOut:
    """The writers' side of a client run, called with each batch (`write`: by a log call, or the fetch thread
    once logging stops) and, under `lock`, by the run.

    Args:
      run_dir: the run folder (its summary.json).
      writer: the run's writers (a `MultiWriter`; `jaxdash.multihost` swaps in its own).
      total: the steps the script said it runs (0: unknown), for the progress line.
      start_step: the last step of a resumed run (-1 for a new one): steps/s counts from there.
      defs: the run's `define_metric` definitions (the summary's ops).
      user_summary: the values the script set in `run.summary` (they win over logged ones).
    """

    def __init__(self, run_dir: Path, writer: Any, total: int, start_step: int, defs: MetricDefs,
                 user_summary: Mapping[str, Any]) -> None:  # fmt: skip
        self.run_dir, self.writer, self.total = Path(run_dir), writer, total
        self.defs, self.user_summary = defs, user_summary
        self.lock = threading.Lock()  # the writers take calls from the script's thread too (media, hparams)
        self.stats: dict[str, list[Any]] = {}  # name -> [last, min, max, sum, count, first, "i"/"b": an int/bool]
        self.texts: dict[str, str] = {}  # each string key's last value (W&B's summary keeps it)
        self.lists: dict[str, list[Any]] = {}  # each list key's last value (small arrays, as W&B's summary keeps them)
        # each histogram key's last array, binned (W&B's histogram dict) only when a summary is read or written
        self.histograms: dict[str, Any] = {}
        self.summary_due = False  # the script changed `run.summary`: summary.json at the next flush
        # A resumed run's earlier summary (summary.json as it was): what this process logs replaces its keys,
        # the rest stays, as W&B's resumed run keeps its summary; a resume that fails at once removes nothing.
        self.earlier: dict[str, Any] = {}
        self.finishing = False  # `finish` began: the last batch flushes whatever the time
        self._t0, self._last_flush = time.monotonic(), 0.0
        self._unflushed = False  # rows written since the last flush
        self._rate_from = (max(start_step, 0), 0.0)  # (step, wall seconds) the steps/s shown counts from

    def write(self, parts: list[Part]) -> None:
        """Hand fetched blocks to the writers (one Progress, on the batch's last step); flush at most every FLUSH_S,
        what that held back at a later call (the fetch thread calls with no parts while the script is idle)."""
        with self.lock:
            if parts:
                self._hand(parts)
                self._unflushed = True
            due = self._unflushed or self.summary_due
            if due and (time.monotonic() - self._last_flush >= FLUSH_S or self.finishing):
                self.writer.flush()
                self._last_flush, self._unflushed = time.monotonic(), False
                if self.summary_due:
                    self.write_summary({**self.logged_summary(), **self.user_summary})

    def _hand(self, parts: list[Part]) -> None:
        """Each part to its writer call, and what W&B's summary needs of it."""
        progress = self._progress(parts)
        final = max((i for i, p in enumerate(parts) if isinstance(p, Block)), default=-1)
        for i, part in enumerate(parts):
            if isinstance(part, Block):
                self.writer.write_scalar_rows(part.steps, part.columns, progress if i == final else None)
                self._note(part.columns, part.ints, part.bools)
            elif isinstance(part, Values):
                self.writer.write_values(part.step, part.values)
                self.lists.update(part.values)
                for key in part.values:  # the summary keeps a key's last value, whichever kind it was
                    self.stats.pop(key, None)
                    self.histograms.pop(key, None)
            else:
                self.writer.write_histograms(*part)
                self.histograms.update(part[1])
                for key in part[1]:
                    self.stats.pop(key, None)
                    self.lists.pop(key, None)

    def write_system(self, sample: Mapping[str, float]) -> None:
        """One sample of the script's system metrics (`jaxdash.system_watch`) as a record of the run store alone,
        at the run's latest step, written now (the run may log nothing for a while)."""
        store = getattr(self.writer, "writers", [None])[0]
        if store is None or not hasattr(store, "write_scalars"):
            return
        with self.lock:
            store.write_scalars(self._rate_from[0], dict(sample))
            store.flush()

    def _progress(self, parts: list[Part]) -> Progress:
        """Where the run stands after this batch: its last step and the steps/s since the batch before."""
        wall = time.monotonic() - self._t0
        last = max((_last_step(p) for p in parts), default=self._rate_from[0])
        rate = (last - self._rate_from[0]) / (wall - self._rate_from[1]) if wall > self._rate_from[1] else None
        self._rate_from = (last, wall)
        return Progress(step=last, total_steps=self.total, wall_seconds=wall, steps_per_sec=rate)

    def _note(self, columns: Mapping[str, np.ndarray], ints: frozenset[str] = frozenset(),
              bools: frozenset[str] = frozenset()) -> None:  # fmt: skip
        """Each tag's last value, and min, max, sum, count and first of its values that are not NaN (the summary),
        and whether its last value was an integer ("i") or a bool ("b")."""
        for name, column in columns.items():
            column = np.asarray(column, dtype=np.float64)
            self.lists.pop(name, None)
            self.histograms.pop(name, None)
            seen = column[~np.isnan(column)]
            st = self.stats.setdefault(name, [math.nan, math.inf, -math.inf, 0.0, 0, math.nan, ""])
            st[0], st[6] = float(column[-1]), "b" if name in bools else "i" if name in ints else ""
            if seen.size:
                if not st[4]:
                    st[5] = float(seen[0])
                st[1], st[2] = min(st[1], float(seen.min())), max(st[2], float(seen.max()))
                st[3], st[4] = st[3] + float(seen.sum()), st[4] + int(seen.size)

    def logged_summary(self) -> dict[str, Any]:
        """W&B's summary of what was logged so far (numbers by their ops, strings' last values); hold `lock`."""
        return {**self.earlier, **summary_of(self.stats, self.defs), **self.lists, **self._binned(), **self.texts}

    def _binned(self) -> dict[str, dict[str, Any]]:
        """Each histogram key's last array as W&B's summary keeps it ({"_type": "histogram", "bins", "values"}),
        binned once; a key of no finite value is left out."""
        for key, value in self.histograms.items():
            if isinstance(value, np.ndarray):
                found = media_store.bins(value, media_store.RAW_BINS)
                self.histograms[key] = found and {"_type": "histogram", "bins": found[1], "values": found[0]}
        return {k: v for k, v in self.histograms.items() if v}

    def write_summary(self, summary: Mapping[str, Any]) -> None:
        """summary.json (a failed write warns: the script goes on)."""
        self.summary_due = False
        try:
            RunFolder(self.run_dir).write_summary(summary)
        except (OSError, TypeError, ValueError) as exc:
            logger.warning("jaxdash: summary.json of %s could not be written (%s)", self.run_dir.name, exc)


def _last_step(part: Part) -> int:
    if isinstance(part, Block):
        return int(part.steps[-1])
    return part.step if isinstance(part, Values) else part[0]
