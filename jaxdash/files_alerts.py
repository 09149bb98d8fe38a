"""`wandb.save` and `wandb.alert` (and `run.save` / `run.alert`) under `import jaxdash as wandb`.

`save` copies the matching files into the run folder's files/ with W&B's layout (runstore.run_files
writes through runstore.nofollow: no link on the way is followed; a refused one is one line); the "live" and "end" policies copy at once,
with one notice. `alert` appends to the run folder's alerts.jsonl, which the page shows. Both are then
made on the run's W&B copy (`to_copy`: the writer process saves the copies / sends the alert through
its own wandb run, so W&B's run holds them as W&B's own). A `mode="disabled"` run does nothing, as in W&B.
"""

from __future__ import annotations

import enum
import glob as globlib
import os
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

from jaxdash.active_run import current_run
from jaxdash.data_types import notice
from runstore import run_files
from runstore.run_folder import FILES, RunFolder
from runstore.safe_files import UnsafePath


def to_copy(run: Any, call: str, *args: Any) -> None:
    """Hand one of the script's run calls (`alert`, `save`, `log_artifact`) to the run's W&B copy, where it
    has one: the writer process (jaxdash/sink.py) makes it there (jaxdash.wandb_copy.CALLS)."""
    for w in getattr(getattr(run, "_writer", None), "writers", None) or []:
        if hasattr(w, "copy_call"):
            w.copy_call(call, *args)


def disabled(run: Any) -> bool:
    """A `mode="disabled"` run: its calls do nothing, as in W&B (its `dir` is no run folder)."""
    return bool(getattr(run, "disabled", False))


class AlertLevel(enum.StrEnum):
    """`wandb.AlertLevel`."""

    INFO = "INFO"
    WARN = "WARN"
    ERROR = "ERROR"


def save(glob_str: str | os.PathLike | None = None, base_path: str | os.PathLike | None = None,
         policy: str = "live", glob: bool = True) -> list[str]:  # fmt: skip
    """`wandb.save`: `save_to` the current run."""
    return save_to(current_run("save"), glob_str, base_path, policy, glob)


def save_to(run: Any, glob_str: str | os.PathLike | None = None, base_path: str | os.PathLike | None = None,
            policy: str = "live", glob: bool = True) -> list[str]:  # fmt: skip
    """Copy the files matching `glob_str` into the run folder's files/, as W&B lays them out: relative to
    `base_path`, default the working folder for a relative glob, the glob's folder's parent for an absolute
    one. Returns the copies' paths. "live" and "end" copy now (one notice): nothing is uploaded here."""
    if glob_str is None or disabled(run):
        return []
    text = os.fspath(glob_str)
    pattern = os.path.abspath(text)
    if base_path is not None:
        base = os.path.abspath(os.fspath(base_path))
    else:
        base = os.getcwd() if not os.path.isabs(text) else os.path.dirname(os.path.dirname(_fixed_part(pattern)))
    if os.path.commonpath([base, pattern]) != base:
        raise ValueError(f"wandb.save({text!r}): the glob may not walk above base_path {base}")
    matches = sorted(globlib.glob(pattern, recursive=True)) if glob else [pattern]
    copies = []
    for match in matches:
        rel = os.path.relpath(match, base)
        try:
            dest = run_files.copy_into(Path(run.dir), Path(match), f"{FILES}/{rel}")
        except UnsafePath as exc:  # a link or a file planted on the way: one line naming it, the script goes on
            notice(f"save({match})", f"not copied: {exc}")
            continue
        if dest is None:
            notice(f"save({match})", "not copied: not a regular file, or its path leads out of the run folder")
        else:
            copies.append(str(dest))
    if copies:
        to_copy(
            run, "save", copies, str(RunFolder(run.dir).files), policy if policy in ("live", "now", "end") else "live"
        )
    if policy != "now":
        notice("save", f"policy={policy!r}: the files are copied now, later changes are not followed")
    return copies


def _fixed_part(pattern: str) -> str:
    """The pattern up to its last folder without a wildcard, plus one name (so dirname gives that folder)."""
    parts = Path(pattern).parts
    for i, part in enumerate(parts):
        if globlib.has_magic(part):
            return str(Path(*parts[:i]) / "x")
    return pattern


_LAST_ALERT: dict[tuple[str, str], float] = {}


def alert(title: str, text: str, level: str | AlertLevel | None = None,
          wait_duration: int | float | timedelta | None = None) -> None:  # fmt: skip
    """`wandb.alert`: `alert_to` the current run."""
    alert_to(current_run("alert"), title, text, level, wait_duration)


def alert_to(run: Any, title: str, text: str, level: str | AlertLevel | None = None,
             wait_duration: int | float | timedelta | None = None) -> None:  # fmt: skip
    """Record an alert in the run folder (alerts.jsonl); the same title again within `wait_duration` s is dropped."""
    if disabled(run):
        return
    level = (level.value if isinstance(level, AlertLevel) else str(level or "INFO")).upper()
    wait = wait_duration.total_seconds() if isinstance(wait_duration, timedelta) else float(wait_duration or 0)
    key, now = (str(run.dir), str(title)), time.monotonic()
    if wait and now - _LAST_ALERT.get(key, -float("inf")) < wait:
        return
    _LAST_ALERT[key] = now
    step = getattr(run, "step", getattr(run, "_step", None))
    to_copy(run, "alert", str(title), str(text), level if level in AlertLevel.__members__ else "INFO")
    try:
        run_files.append_alert(run.dir, title, text, level, int(step) if isinstance(step, int) and step >= 0 else None)
    except OSError as exc:  # a link or FIFO planted as alerts.jsonl, a full disk: one line, the script goes on
        notice(f"alert({title!r})", f"not recorded in the run folder: {exc}")
        return
    notice("alert", "alerts are recorded in the run folder (alerts.jsonl) for the page and in its W&B copy")
