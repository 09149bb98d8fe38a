"""A run's words and files for the pages: W&B's fields (group, job type, notes, summary, define_metric: hidden keys
and chart axes), the run's notes, its process and console output, events and alerts, saved files and logged
artifacts, and whether it stalled (runstore's readers underneath)."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from runstore import processes, run_files, run_log, run_notes, run_output, wandb_reads
from runstore.run_files import ArtifactEntry, FileEntry
from runstore.run_notes import RunNotes
from runstore.wandb_reads import WandbMeta

STEP = wandb_reads.STEP  # the x key of a chart that no definition gives a step_metric
SMALL_FILE = run_files.SMALL_FILE  # a saved file up to this size can be downloaded from the page

Defs = Mapping[str, Mapping[str, Any]]  # define_metric's definitions by key or glob


def wandb_meta(run_dir: Path) -> WandbMeta:
    """A client run's W&B fields (group, job type, tags, notes, entity, define_metric); empty for other runs."""
    return wandb_reads.wandb_meta(run_dir)


def definitions(run_dir: Path) -> dict[str, dict[str, Any]]:
    """The run's define_metric definitions by key or glob ({} when it made none)."""
    return wandb_reads.wandb_meta(run_dir).define_metric


def hidden(defs: Defs, key: str) -> bool:
    """Whether define_metric hides `key` from the charts."""
    return bool(wandb_reads.definition(defs, key).get("hidden"))


def chart_axes(defs: Defs, keys: Sequence[str]) -> dict[str, list[str]]:
    """{x key: the keys charted against it}, STEP first; hidden keys left out."""
    return wandb_reads.chart_axes(defs, keys)


def summary(run_dir: Path) -> tuple[dict[str, Any], str | None]:
    """The run's W&B summary and a problem reading it."""
    return wandb_reads.read_summary(run_dir)


def summary_text(value: Any) -> str:
    """One summary value as the page shows it."""
    return wandb_reads.summary_text(value)


def events(status: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The events of a run's status of the right shape (time, kind, message), oldest first."""
    return wandb_reads.events(status)


def notes(run_dir: Path) -> RunNotes:
    """The run's display name, tags and notes as the page last saved them (empty when none)."""
    return run_notes.load(run_dir)


def process_output(run_dir: Path, lines: int) -> str | None:
    """The last `lines` of the output of a process the page started; None when it has none."""
    return run_log.tail(run_dir, lines)


def has_console_output(run_dir: Path) -> bool:
    """Whether a client script's stdout and stderr were kept."""
    return run_output.has_output(run_dir)


def console_output(run_dir: Path, lines: int) -> str | None:
    """The last `lines` of a client script's stdout and stderr; None when none were kept."""
    return run_output.tail(run_dir, lines)


def alerts(run_dir: Path) -> list[dict[str, Any]]:
    """The run's `wandb.alert`s, oldest first."""
    return run_files.alerts(run_dir)


def alert_count(run_dir: Path) -> int:
    """How many alerts the run raised (cached until its alerts file changes)."""
    return run_files.alert_count(run_dir)


def saved_files(run_dir: Path) -> list[FileEntry]:
    """The files the run saved (`wandb.save`), with sizes."""
    return run_files.saved_file_entries(run_dir)


def logged_artifacts(run_dir: Path) -> list[ArtifactEntry]:
    """The artifacts the run logged, each version with its files."""
    return run_files.artifact_entries(run_dir)


def file_bytes(entry: FileEntry) -> bytes | None:
    """A saved file's bytes when it is small enough to download (None: too big, gone or not a regular file)."""
    return run_files.read_small(entry)


def with_stall(status: dict[str, Any], now: float | None = None) -> dict[str, Any]:
    """The status with "stalled_since" when an active run makes no progress (its process stopped or hung)."""
    return processes.with_stall(status, time.time() if now is None else now)
