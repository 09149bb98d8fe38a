"""The runs root and its runs: listing, reading a run for a listing, new run folders, deleting one.

Stands on the floor, `runstore.run_folder`: one run's files, names and operations are `RunFolder`'s
(its contract: `runstore.run_storage.RunStorage`), the one door to a run (`RunFolder(d).status()`,
`RunFolder(d).append_records(...)`). No JAX here: the dashboard imports this module.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runstore import config_keys
from runstore.atomic import atomic_write_json, column_lines, metric_lines, read_json  # noqa: F401 - API
from runstore.processes import owns_process, pid_alive  # noqa: F401 - part of this module's API
from runstore.run_checks import (  # noqa: F401 - part of this module's API
    DamagedRunFile,
    load_json_object,
    validate_config,
)
from runstore.run_folder import CONFIG, MAX_EVENTS, PROCESS_GONE, RUN_FILES, RunFolder  # noqa: F401 - API

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


# -- the runs root and its runs -------------------------------------------------------------------------------


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


def damaged_run(d: Path, message: str, name: str | None = None, task: str = "?") -> RunInfo:
    """A listing entry for a run whose files are unusable: state "damaged" and a message naming the file."""
    try:
        created = d.lstat().st_mtime  # a link's own time: a link loop has no other
    except OSError:
        created = 0.0
    return RunInfo(d.name, d, name or d.name, task, {}, {"state": "damaged", "message": message}, created)


def read_run(d: Path) -> RunInfo | None:
    """The run in folder `d`, validated; None if `d` holds no run (or only a page launch, see dashboard/processes/launch_status.py)."""
    folder = RunFolder(d)
    try:
        cfg = folder.checked_config()
    except DamagedRunFile as exc:
        return damaged_run(d, str(exc))
    if cfg is None:
        if folder.has_launch():
            return None  # launched from the page, its process has not written config.json yet
        found = [f for f in RUN_FILES if (d / f).exists()]  # names of the floor's
        return damaged_run(d, f"{CONFIG}: missing (the folder has {', '.join(found)})") if found else None
    try:
        validate_config(cfg, CONFIG)
    except DamagedRunFile as exc:
        name = cfg.get("name") if isinstance(cfg.get("name"), str) else None
        return damaged_run(d, str(exc), name, cfg["task"] if isinstance(cfg.get("task"), str) else "?")
    status = folder.status()
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
    if RunFolder(path).status().get("state") == "running":
        raise RuntimeError("stop the run before deleting it")
    shutil.rmtree(path.resolve())
