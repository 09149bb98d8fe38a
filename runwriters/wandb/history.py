"""What a W&B run already holds, read back from its local transaction logs, and what to refill.

A kill -9 loses the rows a trainer had not yet handed to wandb (logged before `wandb.init`
finished, or the newest step still open) and the ~0.1 s the wandb-core service had buffered.
`resume` replays every step after the checkpoint, but not the steps before it; those are refilled
from metrics.jsonl (the run store, written before any other backend) when the W&B folders of the
earlier processes lack them. The folders are read with wandb's own reader (`wandb leet inspect`).
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

_SKIP = ("step", "wall", "ts")  # run-store bookkeeping, not metrics
QUIET_S = 1.0  # an earlier folder unchanged this long: its wandb-core service is done with it


def _wandb_cli() -> str:
    return str(Path(sys.executable).with_name("wandb"))


def history_steps(folder: Path, timeout: float = 60, key: str = "global_step") -> set[int]:
    """The step (`key`: our writer's `global_step`, or W&B's own `_step` for a script's rows) of every
    history row in one W&B run folder (empty if it cannot be read)."""
    try:
        out = subprocess.run(
            [_wandb_cli(), "leet", "inspect", "--json", str(folder)],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        log.warning("Could not read %s (%s); refilling W&B from metrics.jsonl.", folder, exc)
        return set()
    steps = set()
    for line in out.stdout.splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        item = (rec.get("history") or {}).get("item") if isinstance(rec, dict) else None
        if isinstance(item, dict) and isinstance(item.get(key), (int, float)):
            steps.add(int(item[key]))
    return steps


def held_steps(folders: Iterable[Path], key: str = "global_step") -> set[int]:
    """The steps (`key` of each row, see `history_steps`) any of the run's earlier W&B folders holds, read
    once their writers are done with them."""
    folders = list(folders)
    _wait_written(folders)
    have: set[int] = set()
    for folder in folders:
        have |= history_steps(folder, key=key)
    return have


def _wait_written(folders: list[Path], quiet_s: float = QUIET_S, at_most_s: float = 10.0) -> None:
    """Until no folder's transaction log changed for `quiet_s` (at most `at_most_s`).

    A killed trainer's wandb-core service is a process of its own: it still writes the rows it had
    received for a moment after the kill. A resume started at once would read the folder short,
    and log again the rows the service writes after the read (steps in two folders)."""
    deadline = time.monotonic() + at_most_s
    while time.monotonic() < deadline:
        newest = max((f.stat().st_mtime for d in folders for f in d.glob("*.wandb") if f.is_file()), default=0.0)
        idle = time.time() - newest
        if idle >= quiet_s:
            return
        time.sleep(min(quiet_s - idle, max(0.0, deadline - time.monotonic())) + 0.01)


def missing_rows(run_dir: Path, have: set[int], upto: int) -> list[tuple[int, dict[str, Any]]]:
    """metrics.jsonl rows up to step `upto` that are not in `have` (steps held), as (step, scalars), by step."""
    from runstore.run_folder import RecordsReader

    rows: dict[int, dict[str, Any]] = {}
    for rec in RecordsReader(Path(run_dir)).load():
        step = rec.get("step")
        if isinstance(step, int) and step <= upto and step not in have:
            scalars = {k: v for k, v in rec.items() if k not in _SKIP and isinstance(v, (int, float))}
            rows.setdefault(step, {}).update(scalars)
    return sorted(rows.items())
