"""Weights & Biases backend, imported lazily and never allowed to stop or stall training.

* The mode, run id and `wandb.init` arguments follow W&B's own conventions (`wandb_mode`):
  `--wandb` > `$WANDB_MODE` > online when wandb finds credentials, else offline; `WANDB_PROJECT`,
  `WANDB_ENTITY`, `WANDB_DIR`, `WANDB_TAGS`, `WANDB_NOTES`, `WANDB_RUN_GROUP`, `WANDB_JOB_TYPE`.
* `wandb.init` runs in a background thread (`wandb_run`), so training starts without waiting for
  the wandb service (or the network); rows logged meanwhile are buffered. An online failure falls back
  to offline; any other failure warns once, records the error in `info` and leaves the writer inactive.
* History rows are the optimizer steps (`_step == global_step`), buffered and aligned in
  `wandb_rows`; tables and PR curves (W&B's PR chart, `wandb_media`) are logged at close, at the
  last row: the latest of each describes the final model. A kill -9 loses that open row and whatever wandb-core had not yet written; `resume` replays
  the steps after its checkpoint and this writer refills the earlier ones from metrics.jsonl
  (`wandb_history`), so the run's folders together hold every step metrics.jsonl holds.
* Conventions: `epoch` is a step metric for `epoch/*`, losses keep their minimum and accuracies
  their maximum as summary, final metrics go to `summary["final"]`, the process's console output is
  captured (`console="wrap"`) except for a population member, whose Logs tab gets its own progress
  lines instead (`member_log`), the job type is the task and it is also a tag.
* `finish` runs in a thread with a timeout (`wandb_run`), so a slow upload cannot hang the run.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from runstore import media_store, nofollow, run_folder
from runstore.run_folder import RunFolder
from runwriters.base import DEFAULT_TRACKING, Bins, Chart, Images, MetricWriter, Progress, Table, Tracking
from runwriters.wandb import media as wandb_media
from runwriters.wandb import mode as wandb_mode
from runwriters.wandb import run as wandb_run
from runwriters.wandb.member_log import MemberLog
from runwriters.wandb.mode import resolve_mode
from runwriters.wandb.one_hop import one_hop
from runwriters.wandb.rows import StepRows

__all__ = ["WandbWriter", "resolve_mode"]

log = logging.getLogger(__name__)
FLUSH_SECS = 0.5  # W&B log calls at most this often (rows stay buffered in between)
INIT_WAIT_S = 120.0  # the longest a figure waits for the init thread (wandb's own init_timeout is 90 s)
OWN_SYSTEM_METRICS = {"sys/rss_mb"}  # W&B's system panel already charts the process's memory


class WandbWriter(MetricWriter):
    """Logs one run to W&B; `active` is False (and `info["error"]` set) if init failed.

    Args:
      run_dir: the run directory; W&B files go under `run_dir/wandb` (or `$WANDB_DIR/wandb`).
      cfg_dict: the run config (shown in W&B's config panel).
      tracking: its W&B fields: `wandb_mode` ("auto", "online", "offline" or "disabled", see
        `wandb_mode.resolve_mode`), `group` (e.g. a population's id), `job_type` (the task's name, also
        a tag) and `member` (a population member's index: its own W&B id under `$WANDB_RUN_ID`).
      name: display name of the run.
      resume: continue the run with this run directory's id (after a checkpoint).
      resume_step: the checkpoint step a resumed run continues from; earlier steps the W&B run
        lacks are refilled from metrics.jsonl, later steps it already holds are not logged again.
    """

    def __init__(
        self,
        run_dir: str | Path,
        cfg_dict: Mapping[str, Any],
        tracking: Tracking = DEFAULT_TRACKING,
        name: str | None = None,
        resume: bool = False,
        resume_step: int | None = None,
    ):
        self.run_dir = Path(run_dir)
        self.run = None
        self.active = False
        self.finish_timeout = wandb_run.env_timeout("JAXDASH_WANDB_FINISH_TIMEOUT", 30.0)
        self._rows = StepRows()
        self._tables: dict[str, tuple[int, Table]] = {}
        self._pr_curves: dict[str, tuple[int, tuple[np.ndarray, np.ndarray]]] = {}
        self._closed = False
        self._flushed_at = -float("inf")  # monotonic time of the last W&B log call
        self._resume_step = resume_step if resume_step is not None else (0 if resume else None)
        # One process trains every member: its console output is no one member's log.
        self._member_log = MemberLog(initial_step=resume_step or 0) if tracking.member is not None else None
        requested = mode = tracking.wandb_mode
        try:
            mode = resolve_mode(mode)
        except ValueError as exc:
            self.info: dict[str, Any] = {"mode": "disabled", "error": str(exc)}
            log.warning("W&B disabled: %s", exc)
            return
        self.info = {"mode": mode, "requested_mode": requested}
        if mode == "disabled":
            return
        resuming = self._resume_step is not None
        self._kwargs = wandb_mode.init_kwargs(self.run_dir, name, tracking, resuming)
        self._kwargs["resume"] = "allow" if self._resume_step is not None else None
        self.active = True
        self._ready = threading.Event()
        self._pending_hparams: dict[str, Any] = {}
        self._pending_summary: dict[str, float] = {}
        self._final: dict[str, float] = {}
        self._thread = threading.Thread(target=self._start, args=(mode, dict(cfg_dict)), name="wandb-init", daemon=True)
        self._thread.start()

    # -- start (background thread) -----------------------------------------------------------
    def _start(self, mode: str, cfg_dict: dict[str, Any]) -> None:
        """Init (falling back from online to offline), publish the info, then refill a resumed run."""
        try:
            earlier = wandb_mode.run_folders(self.run_dir, self._kwargs["id"])
            error = _folder_refused(self.run_dir, self._kwargs.get("dir")) or self._init(mode, cfg_dict)
            if error and mode == "online":
                log.warning("W&B online init failed (%s); logging offline instead.", error)
                self.info["error"] = error
                self.info["mode"] = mode = "offline"
                wandb_run.teardown()  # the service still holds the failed run's id; a fresh one accepts it offline
                error = self._init(mode, cfg_dict)
            if error:
                log.warning("W&B disabled for this run: %s", error)
                self.info.update(mode="disabled", error=error)
                self.active = False
                return
            wandb_run.preload_pandas()
            # One update: the trainer may be writing this dict to status.json meanwhile.
            self.info.update(wandb_run.run_info(self.run, self.run_dir, mode))
            self._write_status()  # the sync command is known now; a refill may take a while
            if self._resume_step is not None:
                self._refill(earlier)
            self._ready.set()
        finally:
            self._write_status()

    def _write_status(self) -> None:

        if RunFolder(self.run_dir).status_path.exists():
            RunFolder(self.run_dir).write_status(wandb=self.info)

    def _refill(self, earlier: list[Path]) -> None:
        """Log the checkpointed steps the earlier processes' W&B folders lack (a kill lost them), and skip
        the replayed steps after the checkpoint that they already hold, media included: no step is in two
        folders, and a replayed step they lack (the killed process's open row) is logged once, here."""
        from runwriters.wandb.history import held_steps, missing_rows

        held = held_steps(earlier, key=self._rows.step_key)
        rows = missing_rows(self.run_dir, held, int(self._resume_step or 0))
        if rows:
            log.info("W&B: refilling %d steps from metrics.jsonl that the interrupted process lost.", len(rows))
        with self._rows.lock, one_hop(self.run):
            self._rows.held = held
            for step, scalars in rows:
                self._rows.log(step, scalars)

    def wait_ready(self, timeout: float | None = None) -> bool:
        """Block until the run exists (True) or init failed / timed out (False)."""
        if not self.active:
            return False
        self._thread.join(timeout)
        return self._ready.is_set()

    def _init(self, mode: str, cfg_dict: Mapping[str, Any]) -> str | None:
        """Start the run; returns an error string instead of raising."""
        console = "off" if self._member_log is not None else None
        self.run, error = wandb_run.init_run(mode, cfg_dict, self._kwargs, self.finish_timeout, console)
        if self.run is not None:
            self._rows.run = self.run
        return error

    def write_hparams(self, hparams: Mapping[str, Any]) -> None:
        """Config was given at init; later values (e.g. resolved settings) are merged in, once the run exists (an
        empty call sends what waited for it: W&B writes a config record for every update, an empty one too)."""
        if self.active:
            self._pending_hparams.update(hparams)
            if self._ready.is_set() and self._pending_hparams:
                self.run.config.update(self._pending_hparams, allow_val_change=True)
                self._pending_hparams = {}

    def write_scalars(self, step: int, scalars: Mapping[str, float], progress: Progress | None = None) -> None:
        """Buffer scalars (and the epoch in progress) for `step`; they are logged at the next `flush`."""
        if self.active:
            row = self._rows.row(step)
            row.update({k: _number(v) for k, v in scalars.items() if k not in OWN_SYSTEM_METRICS})
            if progress is not None and progress.total_epochs:
                row["epoch"] = int(progress.epoch)
            if self._member_log is not None:
                self._member_log.scalars(step, scalars, progress)

    def write_images(self, step: int, images: Mapping[str, np.ndarray]) -> None:
        """HWC uint8 images as wandb.Image."""
        if self.active:
            import wandb

            self._rows.row(step).update({k: _wandb_images(wandb, v) for k, v in images.items()})

    def write_histograms(self, step: int, arrays: Mapping[str, np.ndarray]) -> None:
        """Arrays as wandb.Histogram."""
        if self.active:
            import wandb

            row = self._rows.row(step)
            for key, value in arrays.items():
                if (histogram := _wandb_histogram(wandb, value)) is not None:
                    row[key] = histogram

    def write_texts(self, step: int, texts: Mapping[str, str]) -> None:
        """Strings in the step's row, as `wandb.log({"note": "text"})` keeps them."""
        if self.active:
            self._rows.row(step).update({k: str(v) for k, v in texts.items()})

    def write_values(self, step: int, values: Mapping[str, Any]) -> None:
        """JSON values (small arrays as lists) in the step's row, as `wandb.log({"w": np.array([1, 2])})` keeps them."""
        if self.active:
            self._rows.row(step).update(values)

    def write_figures(self, step: int, figures: Mapping[str, dict[str, Any]]) -> None:
        """Plotly figures (plotly JSON) as wandb.Plotly at their step, as `wandb.log({key: fig})` stores them."""
        if self.active:
            # plotly imports pandas; importing it here while the init thread imports wandb's modules raced
            # ("partially initialized module 'pandas'", the figure lost): figures wait for the init thread to
            # end (importing wandb, init, preload_pandas: past 30 s on a loaded machine), never import beside it.
            if not self.wait_ready(INIT_WAIT_S):
                return
            import plotly.graph_objects as go
            import wandb

            self._rows.row(step).update({k: wandb.Plotly(go.Figure(fig)) for k, fig in figures.items()})

    def write_charts(self, step: int, charts: Mapping[str, Chart]) -> None:
        """W&B's own custom charts at their step, as `wandb.log({key: wandb.plot.line(...)})` stores them: the
        table under "<key>_table" and the chart's spec in the config's `_wandb.visualize.<key>`."""
        if self.active:
            import wandb

            self._rows.row(step).update({k: _wandb_chart(wandb, c) for k, c in charts.items()})

    def write_tables(self, step: int, tables: Mapping[str, Table]) -> None:
        """Kept until close: the latest table of each tag describes the final model (one W&B table each)."""
        if self.active:
            for tag, table in tables.items():
                self._tables[tag] = (int(step), table)

    def write_pr_curves(self, step: int, curves: Mapping[str, tuple[np.ndarray, np.ndarray]]) -> None:
        """Kept until close, then one W&B PR chart per group ("test/pr/<class>" -> chart "test/pr")."""
        if self.active:
            for tag, (labels, scores) in curves.items():
                self._pr_curves[tag] = (int(step), (np.asarray(labels, bool), np.asarray(scores, np.float64)))

    def write_summary(self, metrics: Mapping[str, float]) -> None:
        """Final metrics under `summary["final"]` (the metric's own key keeps its best-so-far value)."""
        if self.active:
            self._pending_summary.update({k: float(np.asarray(v)) for k, v in metrics.items()})
            if self._member_log is not None:
                self._member_log.summary(metrics)
            if self._ready.is_set() and self._pending_summary:
                self._final.update(self._pending_summary)
                self.run.summary["final"] = dict(self._final)
                self._pending_summary = {}

    def flush(self) -> None:
        """Log buffered rows in step order, at most every FLUSH_SECS (each W&B log call costs ~5 ms of the
        training loop); until the run exists (init in progress) they stay buffered. A kill loses at most
        those seconds here, and `resume` refills them from metrics.jsonl."""
        now = time.monotonic()
        if self._member_log is not None and self._ready.is_set():
            self._member_log.attach(self.run)  # here, in the training thread that also writes its lines
        if self.active and self._rows and self._ready.is_set() and now - self._flushed_at >= FLUSH_SECS:
            self._rows.flush()
            self._flushed_at = now

    def _log_media(self) -> None:
        """The latest table of each tag and the PR charts, in the last row: they describe the final model."""
        for tag, (step, table) in self._tables.items():
            self._rows.row(max(step, self._rows.open_step or 0))[tag] = wandb_media.wandb_table(table)
        self._tables = {}
        for step, key, chart in wandb_media.pr_charts(self._pr_curves):
            self._rows.row(max(step, self._rows.open_step or 0))[key] = chart
        self._pr_curves = {}

    def close(self, state: str = "finished", message: str | None = None) -> None:
        """Log end-of-run media, then finish with an exit code, waiting at most `finish_timeout` (+5 s)."""
        if not self.active or self._closed:
            return
        self._closed = True
        if not self.wait_ready(wandb_run.env_timeout("JAXDASH_WANDB_INIT_TIMEOUT", 15.0) * 2 + 5):
            if self.active:
                log.warning("W&B init did not finish; this run's W&B log is incomplete.")
            return
        try:
            self._log_media()
            self._rows.flush()
            self.write_hparams({})
            self.write_summary({})
            self.run.summary["run/state"] = state
            if message:
                self.run.summary["run/message"] = message
            if self._member_log is not None:
                self._member_log.attach(self.run)
                self._member_log.close(state, message)
        finally:
            self._finish(state)

    def _finish(self, state: str) -> None:
        wandb_run.finish_run(self.run, state, self.finish_timeout, self.info.get("dir"))


def _number(value: Any) -> float | bool:
    """A scalar as W&B's history keeps it: a bool stays true/false, any other number is a float."""
    arr = np.asarray(value)
    return bool(arr) if arr.dtype.kind == "b" else float(arr)


def _wandb_chart(wandb: Any, chart: Chart) -> Any:
    table = wandb_media.wandb_table(chart.table)
    return wandb.plot_table(chart.spec_name, table, dict(chart.fields), dict(chart.string_fields), chart.split_table)


def _wandb_images(wandb: Any, value: np.ndarray | Images) -> Any:
    """A wandb.Image, or for `Images` a list of them with their captions (W&B's images/separated)."""
    if not isinstance(value, Images):
        return wandb.Image(np.asarray(value))
    caps = list(value.captions) + [None] * len(value.pixels)
    if not value.listed and len(value.pixels) == 1:
        return wandb.Image(np.asarray(value.pixels[0]), caption=caps[0])
    return [wandb.Image(np.asarray(p), caption=c) for p, c in zip(value.pixels, caps, strict=False)]


def _wandb_histogram(wandb: Any, value: np.ndarray | Bins) -> Any:
    """A wandb.Histogram of `Bins`, or of an array binned as `wandb.log` bins one (32 bins in its own dtype: the run
    store's bins, finite values only); None for an array of no finite value."""
    if isinstance(value, Bins):
        return wandb.Histogram(np_histogram=(np.asarray(value.counts).tolist(), np.asarray(value.edges).tolist()))
    found = media_store.bins(value, media_store.RAW_BINS)
    return None if found is None else wandb.Histogram(np_histogram=found)


def _folder_refused(run_dir: Path, wandb_dir: str | None) -> str | None:
    """Why W&B may not write into the run folder's wandb/ (a link or a file planted there), else None: W&B's
    own files are written by wandb, so its folder is made (or entered) here first without following a link."""
    if wandb_dir is None or Path(wandb_dir) != Path(run_dir).resolve():
        return None  # $WANDB_DIR: the user's own folder
    try:
        nofollow.make_folder(run_dir, run_folder.WANDB)
    except OSError as exc:
        return str(exc)
    return None
