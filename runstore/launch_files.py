"""What the page writes into a run folder when it starts a process there: launch.json and process.log.

Written by the page's launcher only, read by every page: launch.json lets any page or tab show
a run before its process has written config.json (pid, command, task, a population's axes), and
process.log holds the process's output. A damaged or hand-edited launch.json loses the fields it
got wrong, never the page. No Streamlit here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from runstore import atomic
from runstore.run_checks import DamagedRunFile, load_json_object
from runstore.run_folder import LAUNCH, RunFolder

# launch.json fields and their types: a damaged or hand-edited file loses the fields it got wrong.
LAUNCH_FIELDS = {
    "pid": int,
    "launched": (int, float),
    "name": str,
    "task": str,
    "group": str,
    "population": dict,
    "members": int,
    "resume": dict,
    "command": list,
    "via": str,
    "queue_job": int,  # the run queue's job (training/queue) while the start waits there, and after
}


def process_log(run_dir: Path) -> Path:
    """Where the process started in `run_dir` writes its stdout and stderr."""
    return RunFolder(run_dir).log_path


def write_launch(run_dir: Path, record: dict[str, Any]) -> None:
    """Replace `run_dir`'s launch.json atomically (readers see the old or the new record, never half)."""
    atomic.atomic_write_json(RunFolder(run_dir).launch_path, record)


def launch_info(run_dir: Path) -> dict[str, Any]:
    """launch.json of a run started from the page ({} for CLI runs), with wrongly typed fields dropped."""
    info = _typed(atomic.read_json(RunFolder(run_dir).launch_path, {}))
    if "resume" in info:
        info["resume"] = _typed(info["resume"])
    return info


def launch_damage(run_dir: Path) -> str:
    """What is wrong with a launch.json that gave no usable fields."""
    try:
        load_json_object(RunFolder(run_dir).launch_path)
    except DamagedRunFile as exc:
        return str(exc)
    return f"{LAUNCH}: holds no launch record (no pid, command or task)"


def _typed(info: Any) -> dict[str, Any]:
    """`info` without the LAUNCH_FIELDS of a wrong type (and with "launched" a plausible unix time)."""
    if not isinstance(info, dict):
        return {}
    out = {}
    for key, value in info.items():
        kind = LAUNCH_FIELDS.get(key)
        if kind is None or (isinstance(value, kind) and not isinstance(value, bool)):
            out[key] = value
    if "launched" in out and not 0 <= out["launched"] < 1e11:  # also rules out NaN and inf
        del out["launched"]
    return out
