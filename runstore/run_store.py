"""The run directory: the only contract between a training process and the page.

Who writes which file and what a reader may assume: `runstore.run_folder` (RunFolder, the API the
other packages use; it delegates here).

Layout of `<root>/<run_id>/`:

    config.json      {"run_id", "name", "task", "task_spec", "panels", "config": {...}, "created", "command"}
                     (+ "group", "member", "pbt" for a member of a population)
    status.json      lifecycle + progress, replaced atomically (see `write_status`)
    metrics.jsonl    one JSON object per logged step: {"step", "wall", "ts", "<tag>": value, ...}
    summary.json     a client run's summary as W&B keeps it (`write_summary`); config.json may also hold
                     "define_metric", "job_type", "wandb_group" (a W&B group, not a population), "tags",
                     "notes", "entity"; status.json "events": [{"time", "kind", "message"}] (`add_event`)
    artifacts/       tables/<tag>.json (e.g. fit__curve.json, test__confusion.json: latest table of a tag),
                     images/<tag>.png, texts.json (before #38 also final_metrics.json: see run_folder)
    final_metrics.json  the ended run's final metrics (`run_folder.RunFolder.write_final_metrics`)
    tb/<name>/       tensorboardX event files
    wandb/           wandb run files
    ckpt/            checkpoints
    stop             its presence asks the training process to stop after the current chunk

States: running -> finished | failed | diverged | stopped. A reader that finds
"running" while the process is gone reports "crashed" (see `read_status`).
No JAX here: the dashboard imports this module.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import socket
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runstore import config_keys, nofollow
from runstore.atomic import (  # noqa: F401 - API
    append_metric_lines,
    append_metrics,
    atomic_write_json,
    column_lines,
    metric_lines,
    read_json,
)
from runstore.processes import owns_process, pid_alive  # noqa: F401 - part of this module's API
from runstore.run_checks import (  # noqa: F401 - part of this module's API
    DamagedRunFile,
    load_json_object,
    validate_config,
    validate_status,
)

_STATUS_LOCK = threading.Lock()
_SLUG = re.compile(r"[^a-z0-9_-]+")


def default_runs_root() -> Path:
    """The per-user runs folder, the same from every working directory: $XDG_DATA_HOME/jaxdash/runs,
    else ~/.local/share/jaxdash/runs (a relative $XDG_DATA_HOME is ignored, as the XDG spec asks)."""
    data = os.environ.get("XDG_DATA_HOME", "")
    base = Path(data) if os.path.isabs(data) else Path.home() / ".local" / "share"
    return base / "jaxdash" / "runs"


def runs_root(root: str | os.PathLike | None = None) -> Path:
    """The runs root, absolute: the argument, else $JAXDASH_RUNS, else `default_runs_root()`.

    One default for the dashboard and every script on the machine, whatever folder each runs from."""
    chosen = root if root is not None else os.environ.get("JAXDASH_RUNS") or default_runs_root()
    return Path(chosen).expanduser().resolve()


def slugify(name: str, max_len: int = 40) -> str:
    """A run name reduced to [a-z0-9_-]: it can never contain '/' or '..'."""
    s = _SLUG.sub("-", name.strip().lower()).strip("-_")
    return s[:max_len].strip("-_")


def new_run_dir(root: str | os.PathLike | None, task: str, name: str | None = None) -> Path:
    """Create a fresh, uniquely named run directory inside `root` and return it."""
    base = runs_root(root).resolve()
    base.mkdir(parents=True, exist_ok=True)
    slug = slugify(name or "") or task
    for _ in range(100):
        run_id = f"{time.strftime('%Y%m%d-%H%M%S')}-{slug}-{secrets.token_hex(2)}"
        path = (base / run_id).resolve()
        if path.parent != base:  # defence in depth; slugify already forbids separators
            raise ValueError(f"run name {name!r} would leave the runs root")
        try:
            path.mkdir()
        except FileExistsError:
            continue
        return path
    raise RuntimeError("could not allocate a unique run id")


def write_config(
    run_dir: Path,
    task: str,
    config: Mapping[str, Any],
    name: str | None = None,
    command: list[str] | None = None,
    **extra: Any,
) -> None:
    """Write config.json once, at the start of the run.

    `extra` adds top-level fields, e.g. a population member's {"group": <group id>, "member": <index>}.
    """
    atomic_write_json(
        run_dir / "config.json",
        {
            "run_id": run_dir.name,
            "name": name or run_dir.name,
            "task": task,
            "config": dict(config),
            "created": time.time(),
            "command": command,
            **extra,
        },
    )


def update_config(run_dir: Path, **fields: Any) -> None:
    """Replace top-level fields of config.json (atomic), e.g. a client's `config` changed after its start,
    or "define_metric" (its metric definitions). The writer of config.json only."""
    path = Path(run_dir) / "config.json"
    doc = read_json(path, {})
    doc = doc if isinstance(doc, dict) else {}
    doc.update(fields)
    atomic_write_json(path, doc)


def write_summary(run_dir: Path, summary: Mapping[str, Any]) -> None:
    """summary.json: the run's summary as W&B keeps it (numbers, strings, {"min": .., "max": ..} dicts)."""
    atomic_write_json(Path(run_dir) / "summary.json", dict(summary))


MAX_EVENTS = 50


def add_event(run_dir: Path, kind: str, message: str, **extra: Any) -> None:
    """Append {"time", "kind", "message", ...} to status.json "events" (the newest MAX_EVENTS kept),
    e.g. kind "write_gap": the run store could not be written for a while (a full disk), then was."""
    path = Path(run_dir) / "status.json"
    with _STATUS_LOCK:
        status = read_json(path, {})
        status = status if isinstance(status, dict) else {}
        events = status.get("events") if isinstance(status.get("events"), list) else []
        events = [*events, {"time": time.time(), "kind": kind, "message": message, **extra}][-MAX_EVENTS:]
        status["events"] = events
        status["updated"] = time.time()
        atomic_write_json(path, status)


def write_status(run_dir: Path, **fields: Any) -> dict[str, Any]:
    """Merge `fields` into status.json (atomic replace) and return the new status.

    Fields used: state, pid, host, started, ended, message, step, total_steps, epoch,
    total_epochs, wall_seconds, compile_seconds, steps_per_sec, final (dict), wandb
    (dict: mode, url, sync_command, dir), updated.
    """
    path = run_dir / "status.json"
    with _STATUS_LOCK:  # writers' background threads update it too: no lost read-modify-write
        status = read_json(path, {})
        status = status if isinstance(status, dict) else {}  # a damaged status.json is replaced, not merged
        status.update(fields)
        status["updated"] = time.time()
        atomic_write_json(path, status)
    return status


def start_status(run_dir: Path, total_steps: int, **extra: Any) -> dict[str, Any]:
    """Mark the run as running in this process."""
    return write_status(
        run_dir,
        state="running",
        pid=os.getpid(),
        host=socket.gethostname(),
        started=time.time(),
        ended=None,
        message=None,
        step=0,
        total_steps=total_steps,
        **extra,
    )


def read_status(run_dir: Path) -> dict[str, Any]:
    """status.json, validated; a "running" run whose process is gone is reported as "crashed".

    Missing: {}. Unreadable, truncated or of the wrong shape: {"state": "damaged", "message": <file: what>}.
    """
    try:
        status = load_json_object(Path(run_dir) / "status.json")
        status = validate_status(status) if status is not None else {}
    except DamagedRunFile as exc:
        return {"state": "damaged", "message": str(exc)}
    if status.get("state") == "running" and status.get("host", socket.gethostname()) == socket.gethostname():
        if not pid_alive(status.get("pid")):
            status["state"] = "crashed"
            status.setdefault("message", None)
            lost = _lost_host(run_dir) if not status["message"] else None
            if lost is not None:
                status["lost_host"], status["message"] = lost
            status["message"] = status["message"] or PROCESS_GONE
    return status


PROCESS_GONE = "The training process exited without finishing (killed or crashed)."


def _lost_host(run_dir: Path) -> tuple[int, str] | None:
    """(process, message) of a job's host that is gone, when its process 0 ended without a word (a collective
    aborts process 0 the moment a peer dies, before it can record why); None when no other host is gone."""
    from runstore import hosts  # hosts imports this module's neighbours only; imported when needed

    shown, _ = hosts.read_hosts(run_dir)
    gone = [h for h in shown if h["process"] not in (0, None) and h["state"] == "crashed"]
    if not gone:
        return None
    return gone[0]["process"], hosts.lost_message(gone[0], len(shown), "its process is gone (killed or crashed)")


def read_metrics(run_dir: Path, offset: int = 0, max_bytes: int | None = None) -> tuple[list[dict[str, Any]], int]:
    """Records from byte `offset` on, and the new offset: `runstore.run_folder.read_records`."""
    from runstore.run_folder import read_records  # run_folder imports this module

    return read_records(run_dir, offset, max_bytes)


def request_stop(run_dir: Path) -> None:
    """Ask the run to stop cleanly after its current chunk (a link planted as `stop` is replaced, never followed)."""
    nofollow.replace(run_dir, "stop", b"", fsync=False)


def stop_requested(run_dir: Path) -> bool:
    return (Path(run_dir) / "stop").exists()


@dataclass
class RunInfo:
    """A run as listed by the dashboard. A damaged run has status {"state": "damaged", "message": ...}."""

    run_id: str
    path: Path
    name: str
    task: str
    config: dict[str, Any]
    status: dict[str, Any]
    created: float

    @property
    def flat_config(self) -> dict[str, Any]:
        """The config with nested settings as dotted keys ("model.hidden"), as every page shows it."""
        return config_keys.flatten(self.config) if isinstance(self.config, dict) else {}

    @property
    def damaged(self) -> bool:
        """True when the run's files could not be used (the status message says which and why)."""
        return self.status.get("state") == "damaged"


# Files only a training process writes: a folder holding one of them but no config.json is a damaged run.
RUN_FILES = ("status.json", "metrics.jsonl", "final_metrics.json", "artifacts", "ckpt", "tb", "wandb", "stop")


def damaged_run(d: Path, message: str, name: str | None = None, task: str = "?") -> RunInfo:
    """A listing entry for a run whose files are unusable: state "damaged" and a message naming the file."""
    try:
        created = d.lstat().st_mtime  # a link's own time: a link loop has no other
    except OSError:
        created = 0.0
    return RunInfo(d.name, d, name or d.name, task, {}, {"state": "damaged", "message": message}, created)


def read_run(d: Path) -> RunInfo | None:
    """The run in folder `d`, validated; None if `d` holds no run (or only a page launch, see dashboard/processes/launch_status.py)."""
    try:
        cfg = load_json_object(d / "config.json")
    except DamagedRunFile as exc:
        return damaged_run(d, str(exc))
    if cfg is None:
        if (d / "launch.json").exists():
            return None  # launched from the page, its process has not written config.json yet
        found = [f for f in RUN_FILES if (d / f).exists()]
        return damaged_run(d, f"config.json: missing (the folder has {', '.join(found)})") if found else None
    try:
        validate_config(cfg)
    except DamagedRunFile as exc:
        name = cfg.get("name") if isinstance(cfg.get("name"), str) else None
        return damaged_run(d, str(exc), name, cfg["task"] if isinstance(cfg.get("task"), str) else "?")
    status = read_status(d)
    return RunInfo(d.name, d, cfg.get("name") or d.name, cfg["task"], cfg["config"], status, cfg["created"])


def _entries(root: str | os.PathLike | None) -> list[os.DirEntry]:
    """The visible entries directly under the runs root ([] if it cannot be listed)."""
    try:
        with os.scandir(runs_root(root)) as it:
            return [e for e in it if not e.name.startswith(".")]
    except OSError:
        return []


def _is_real_dir(entry: os.DirEntry) -> bool:
    try:
        return entry.is_dir(follow_symlinks=False)  # a link (a loop, or out of the root) is never a run folder
    except OSError:
        return False  # vanished or unreadable: this entry only, never the whole listing


def run_folders(root: str | os.PathLike | None = None) -> list[Path]:
    """The real folders directly under the runs root (no links, hidden ones left out)."""
    return [Path(e.path) for e in _entries(root) if _is_real_dir(e)]


def linked_runs(root: str | os.PathLike | None = None) -> list[RunInfo]:
    """Symbolic links directly under the runs root, each listed as a damaged run saying why it is not read."""
    out = []
    for e in _entries(root):
        if e.is_symlink():
            msg = f"{e.name}: a symbolic link, not read (it may point outside the runs root); move the run folder here"
            out.append(damaged_run(Path(e.path), msg))
    return out


def delete_run(run_dir: Path, root: str | os.PathLike | None = None) -> None:
    """Remove a run directory; refuses a symlink, anything not directly inside the runs root, or a running run."""
    base = runs_root(root).resolve()
    path = Path(run_dir)
    if path.is_symlink() or not path.is_dir():
        raise ValueError(f"{path} is not a run directory (a link or not a folder); not deleted")
    if path.resolve().parent != base or path.name in ("", ".", ".."):
        raise ValueError(f"{path} is not a run inside {base}")
    if read_status(path).get("state") == "running":
        raise RuntimeError("stop the run before deleting it")
    shutil.rmtree(path.resolve())
