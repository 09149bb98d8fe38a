"""Assemble the writers a run logs through, in the order that keeps the run store safe.

The run store comes first: it is what the dashboard reads, so it must get every
call even if a later backend raises. Every other backend is optional; one that
fails to start is reported in the returned info and left out, never raised.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from runstore.run_folder import RunFolder
from runwriters.async_writer import BackgroundWrites
from runwriters.base import DEFAULT_TRACKING, MetricWriter, MultiWriter, NullWriter, Tracking
from runwriters.store import RunStoreWriter

log = logging.getLogger(__name__)


def build_writer(
    run_dir: str | Path,
    cfg: Mapping[str, Any],
    name: str | None = None,
    tracking: Tracking = DEFAULT_TRACKING,
    resume_step: int | None = None,
) -> tuple[MultiWriter, dict[str, Any]]:
    """Writers for one run: run store, then TensorBoard, console and W&B as asked.

    Args:
      run_dir: the run directory (existing).
      cfg: the run's settings as plain values (a config's `settings.fields.config_to_dict`).
      name: display name for W&B (defaults to the run directory name).
      tracking: TensorBoard, console and W&B settings (`Tracking`).
      resume_step: the run continues after its checkpoint at this step: TensorBoard purges later
        events of the interrupted process, W&B resumes the same run id, the bar starts there.

    Returns:
      (writer, info) where info holds extra status.json fields, e.g.
      {"wandb": {"mode", "url", "dir", "sync_command"}, "tensorboard": {"logdir"}}.
    """
    run_dir = Path(run_dir)
    cfg_dict = dict(cfg)
    # The first writer is required (its failures end the run): the run store, or nothing to require.
    # Its chunks written on a background thread, double-buffered (the fsyncs overlap the next chunk's compute).
    writers: list[MetricWriter] = [BackgroundWrites(RunStoreWriter(run_dir)) if tracking.run_store else NullWriter()]
    info: dict[str, Any] = {}
    job_type = tracking.job_type
    if tracking.tensorboard:
        _add_tensorboard(writers, info, run_dir, name, job_type, resume_step)
    if tracking.console:
        _add_console(writers, resume_step)
    # W&B after the console: its close prints the outcome (a failed run's error) while W&B still captures
    # the process's output for its Logs tab.
    info["wandb"] = _add_wandb(writers, run_dir, cfg_dict, name, tracking, resume_step)
    return MultiWriter(writers), info


def _add_tensorboard(
    writers: list[MetricWriter],
    info: dict[str, Any],
    run_dir: Path,
    name: str | None,
    job_type: str | None,
    resume_step: int | None,
) -> None:
    """Append the TensorBoard writer (listed as <run id>/tb/<name>); on failure, say why in `info` instead."""
    try:
        from runwriters.tensorboard import TensorBoardWriter

        # Its given name, a member's varied values, or the task.
        given = name if name and name != run_dir.name else None
        tb = TensorBoardWriter(
            RunFolder(run_dir).tensorboard, run_name=given or job_type or "run", resume_step=resume_step
        )
        writers.append(tb)
        info["tensorboard"] = {"logdir": str(tb.logdir)}
    except Exception as exc:  # noqa: BLE001 - tracking must never stop training
        log.warning("TensorBoard writer unavailable (%s: %s); continuing without it.", type(exc).__name__, exc)
        info["tensorboard"] = {"error": f"{type(exc).__name__}: {exc}"}


def _add_console(writers: list[MetricWriter], resume_step: int | None) -> None:
    """Append the tqdm progress bar (starting at `resume_step`); a missing tqdm only warns."""
    try:
        from runwriters.console import ConsoleWriter

        writers.append(ConsoleWriter(initial_step=int(resume_step or 0)))
    except Exception as exc:  # noqa: BLE001 - a missing tqdm must not stop a run
        log.warning("console writer unavailable (%s: %s).", type(exc).__name__, exc)


def _add_wandb(
    writers: list[MetricWriter],
    run_dir: Path,
    cfg_dict: dict[str, Any],
    name: str | None,
    tracking: Tracking,
    resume_step: int | None,
) -> dict[str, Any]:
    """Append the W&B writer if it is active; returns its info (mode, url, dir, sync command or error).

    WandbWriter never raises from __init__; a failed init disables it and says why in .info.
    resolve_mode: --wandb > $WANDB_MODE > credentials.
    """
    from runwriters.wandb.writer import WandbWriter

    wb = WandbWriter(
        run_dir, cfg_dict, tracking, name=name or run_dir.name, resume=resume_step is not None, resume_step=resume_step
    )
    if wb.active:
        writers.append(wb)
    return wb.info
