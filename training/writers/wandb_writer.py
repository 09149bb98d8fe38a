"""Weights & Biases backend, imported lazily and never allowed to stop or stall training.

* Mode "auto" is online only when an API key is already configured (env or
  netrc, looked up locally), else offline, so nobody is prompted and nothing
  waits on the network. A run logged offline is uploaded later with the
  `sync_command` this writer reports.
* `wandb.init` runs in a background thread, so training starts without waiting
  for the wandb service (or the network); calls made meanwhile are buffered and
  the run's info (sync command, URL) reaches status.json when init is done.
  Any failure in `wandb.init` warns once, records the error in `info`, and
  leaves the writer inactive (an online failure first falls back to offline).
* Rows are buffered per step and logged with `commit=True` at `flush`, once per
  chunk: wandb only writes a step's row when a later step arrives, so without
  the commit a kill -9 would always lose the newest step. The .wandb file itself
  is written by the wandb-core service process, which flushes it on a timer
  (set to 0.1 s here) and not when the trainer dies: rows logged in the last
  ~0.1 s before a kill -9 are lost (measured; see tests/test_tracking_e2e.py).
* `finish` runs in a thread with a timeout, so a slow upload cannot hang the run.
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import os
import re
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from training.writers.base import MetricWriter, Progress, Table

log = logging.getLogger(__name__)

EXIT_CODES = {"finished": 0, "stopped": 0, "failed": 1, "diverged": 3}
_FLUSH_SETTING = "x_transaction_log_flush_interval"


def _timeout(var: str, default: float) -> float:
    """Seconds from $var (read per run, so a test or the page can shorten it), else `default`."""
    try:
        return float(os.environ.get(var, default))
    except ValueError:
        return default


def api_key_configured() -> bool:
    """True if a W&B API key is available locally (WANDB_API_KEY or netrc); no network."""
    if os.environ.get("WANDB_API_KEY") or os.environ.get("WANDB_IDENTITY_TOKEN_FILE"):
        return True
    host = os.environ.get("WANDB_BASE_URL", "https://api.wandb.ai")
    try:
        from wandb.sdk.lib.wbauth import read_netrc_auth  # wandb's own lookup (same file, same host rules)

        return bool(read_netrc_auth(host=host))
    except Exception:  # noqa: BLE001 - private API moved or netrc unreadable: treat as not logged in
        return False


def resolve_mode(mode: str) -> str:
    """Map "auto" to "online" when logged in, else "offline"; other modes pass through."""
    if mode not in ("auto", "online", "offline", "disabled"):
        raise ValueError(f"unknown W&B mode {mode!r}; use auto, online, offline or disabled")
    if mode == "auto":
        return "online" if api_key_configured() else "offline"
    return mode


def _teardown() -> None:
    with contextlib.suppress(Exception):  # best effort before retrying offline
        import wandb

        wandb.teardown()


def _run_id(name: str) -> str:
    # W&B ids may not contain / \ # ? % : and are at most 64 characters.
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", name)[:64] or "run"


class WandbWriter(MetricWriter):
    """Logs one run to W&B; `active` is False (and `info["error"]` set) if init failed.

    Args:
      run_dir: the run directory; W&B files go under `run_dir/wandb`.
      cfg_dict: the run config (shown in W&B's config panel).
      name: display name of the run.
      mode: "auto", "online", "offline" or "disabled".
      resume: continue the run with this run directory's id (after a checkpoint).
      group: W&B group, e.g. a population's id.
    """

    def __init__(
        self,
        run_dir: str | Path,
        cfg_dict: Mapping[str, Any],
        name: str | None = None,
        mode: str = "auto",
        resume: bool = False,
        group: str | None = None,
        job_type: str | None = None,
    ):
        self.run_dir = Path(run_dir)
        self.run = None
        self.active = False
        self.finish_timeout = _timeout("JAXDASH_WANDB_FINISH_TIMEOUT", 30.0)
        self._rows: dict[int, dict[str, Any]] = {}
        self._next_step = 0  # wandb's current step: rows below it can no longer take `step=`
        self._tables: dict[str, tuple[int, Table]] = {}
        self._closed = False
        self._init_args = {"resume": "allow" if resume else None, "group": group, "job_type": job_type}
        requested = mode
        try:
            mode = resolve_mode(mode)
        except ValueError as exc:
            self.info: dict[str, Any] = {"mode": "disabled", "error": str(exc)}
            log.warning("W&B disabled: %s", exc)
            return
        self.info = {"mode": mode, "requested_mode": requested}
        if mode == "disabled":
            return
        # wandb.init starts the wandb-core service (about a second offline, up to init_timeout
        # online); training must not wait for it. Calls made meanwhile are buffered and logged
        # once the run exists; close() waits for it.
        self.active = True
        self._ready = threading.Event()
        self._pending_hparams: dict[str, Any] = {}
        self._pending_summary: dict[str, float] = {}
        self._thread = threading.Thread(
            target=self._start, args=(mode, dict(cfg_dict), name), name="wandb-init", daemon=True
        )
        self._thread.start()

    def _start(self, mode: str, cfg_dict: dict[str, Any], name: str | None) -> None:
        """Background thread: init (falling back from online to offline), then publish the info."""
        try:
            error = self._init(mode, cfg_dict, name)
            if error and mode == "online":
                log.warning("W&B online init failed (%s); logging offline instead.", error)
                self.info["error"] = error
                self.info["mode"] = mode = "offline"
                _teardown()  # the service still holds the failed run's id; a fresh one accepts it offline
                error = self._init(mode, cfg_dict, name)
            if error:
                log.warning("W&B disabled for this run: %s", error)
                self.info.update(mode="disabled", error=error)
                self.active = False
                return
            # wandb imports pandas (if installed) at the first media/histogram, ~0.3 s: now, not mid-run.
            if importlib.util.find_spec("pandas") is not None:
                import pandas  # noqa: F401
            sync_dir = str(getattr(self.run.settings, "sync_dir", "") or "")
            self.info.update(dir=sync_dir, project=self.run.project, id=self.run.id, url=None)
            if mode == "online":
                self.info["url"] = self.run.url
            else:
                # A resumed run has one offline folder per process, all with the same id; `wandb sync`
                # uploads them in start-time order into one run.
                folders = sorted(str(p) for p in (self.run_dir / "wandb").glob("offline-run-*")) or [sync_dir]
                self.info["sync_command"] = "wandb sync " + " ".join(folders)
            self._ready.set()
        finally:
            from training import run_store

            if (self.run_dir / "status.json").exists():
                run_store.write_status(self.run_dir, wandb=self.info)

    def wait_ready(self, timeout: float | None = None) -> bool:
        """Block until the run exists (True) or init failed / timed out (False)."""
        if not self.active:
            return False
        self._thread.join(timeout)
        return self._ready.is_set()

    def _init(self, mode: str, cfg_dict: Mapping[str, Any], name: str | None) -> str | None:
        """Start the run; returns an error string instead of raising."""
        try:
            import wandb

            settings = wandb.Settings(
                init_timeout=_timeout("JAXDASH_WANDB_INIT_TIMEOUT", 15.0),
                console="off",  # stdout stays ours; the console writer already shows progress
                silent=True,
                finish_timeout=self.finish_timeout,
                # wandb-core flushes the .wandb file every 15 s and not when the trainer is killed: that buffer
                # is what a kill -9 loses. 0.1 s instead (an x_ setting: passed only if this version has it).
                **({"x_transaction_log_flush_interval": 0.1} if _FLUSH_SETTING in wandb.Settings.model_fields else {}),
            )
            self.run = wandb.init(
                dir=str(self.run_dir),
                project=os.environ.get("WANDB_PROJECT", "jax-dashboard"),
                name=name or self.run_dir.name,
                id=_run_id(self.run_dir.name),
                config=dict(cfg_dict),
                mode=mode,
                reinit="create_new",
                settings=settings,
                **self._init_args,
            )
            # Every metric is plotted against the training step, also rows logged out of order.
            self.run.define_metric("global_step")
            self.run.define_metric("*", step_metric="global_step")
            return None
        except Exception as exc:  # noqa: BLE001 - any init failure disables W&B, never the run
            self.run = None
            return f"{type(exc).__name__}: {exc}"

    # -- buffered rows -------------------------------------------------------------------
    def _row(self, step: int) -> dict[str, Any]:
        return self._rows.setdefault(int(step), {})

    def write_hparams(self, hparams: Mapping[str, Any]) -> None:
        """Config was given at init; later values (e.g. resolved settings) are merged in."""
        if self.active:
            self._pending_hparams.update(hparams)
            if self._ready.is_set():
                self.run.config.update(self._pending_hparams, allow_val_change=True)
                self._pending_hparams = {}

    def write_scalars(self, step: int, scalars: Mapping[str, float], progress: Progress | None = None) -> None:
        """Buffer scalars for `step`; they are logged at the next `flush`."""
        if self.active:
            self._row(step).update({k: float(np.asarray(v)) for k, v in scalars.items()})

    def write_images(self, step: int, images: Mapping[str, np.ndarray]) -> None:
        """HWC uint8 images as wandb.Image."""
        if self.active:
            import wandb

            self._row(step).update({k: wandb.Image(np.asarray(v)) for k, v in images.items()})

    def write_histograms(self, step: int, arrays: Mapping[str, np.ndarray]) -> None:
        """Arrays as wandb.Histogram."""
        if self.active:
            import wandb

            self._row(step).update({k: wandb.Histogram(np.asarray(v).ravel()) for k, v in arrays.items()})

    def write_tables(self, step: int, tables: Mapping[str, Table]) -> None:
        """Kept until close: the latest table of each tag describes the final model (one W&B table each)."""
        if self.active:
            for tag, table in tables.items():
                self._tables[tag] = (int(step), table)

    def write_summary(self, metrics: Mapping[str, float]) -> None:
        """Final metrics as the run summary."""
        if self.active:
            self._pending_summary.update({k: float(np.asarray(v)) for k, v in metrics.items()})
            if self._ready.is_set():
                self.run.summary.update(self._pending_summary)
                self._pending_summary = {}

    def flush(self) -> None:
        """Log buffered rows in step order, each committed so the service writes it now.

        Until the run exists (init in progress) rows stay buffered.
        """
        if not self.active or not self._rows or not self._ready.is_set():
            return
        rows, self._rows = self._rows, {}
        for step in sorted(rows):
            data = {**rows[step], "global_step": step}
            if step >= self._next_step:
                self.run.log(data, step=step, commit=True)
                self._next_step = step + 1
            else:
                # A late row for a committed step: wandb would drop it with `step=`; logged
                # without it, it still plots at `global_step` via define_metric.
                self.run.log(data, commit=True)
                self._next_step += 1

    def _log_tables(self) -> None:
        import wandb

        for tag, (step, table) in self._tables.items():
            rows = [[wandb.Image(np.asarray(c, dtype=np.uint8)) if _is_image(c) else c for c in row] for row in table.rows]
            self._row(step)[tag] = wandb.Table(columns=list(table.columns), data=rows)
        self._tables = {}

    def close(self, state: str = "finished", message: str | None = None) -> None:
        """Log end-of-run media, then finish with an exit code, waiting at most `finish_timeout` (+5 s)."""
        if not self.active or self._closed:
            return
        self._closed = True
        if not self.wait_ready(_timeout("JAXDASH_WANDB_INIT_TIMEOUT", 15.0) * 2 + 5):
            if self.active:
                log.warning("W&B init did not finish; this run's W&B log is incomplete.")
            return
        try:
            self._log_tables()
            self.flush()
            # After the rows: logging a row sets the summary to its values, the final ones win.
            self.write_hparams({})
            self.write_summary({})
            self.run.summary["run/state"] = state
            if message:
                self.run.summary["run/message"] = message
        finally:
            run = self.run
            t = threading.Thread(target=run.finish, kwargs={"exit_code": EXIT_CODES.get(state, 1)}, daemon=True)
            t.start()
            t.join(self.finish_timeout + 5)
            if t.is_alive():
                log.warning(
                    "W&B finish still running after %.0fs; not waiting (run: %s).",
                    self.finish_timeout + 5,
                    self.info.get("dir"),
                )


def _is_image(cell: Any) -> bool:
    """A table cell holding a 2-D grid of pixel values (a nested list), logged as a wandb.Image."""
    return isinstance(cell, list) and bool(cell) and isinstance(cell[0], list)
