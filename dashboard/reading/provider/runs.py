"""Runs for the pages: the runs root, its run folders, one run as listed, a TensorBoard logdir's mirrored runs,
and the signature that changes when a run starts, ends or goes (runstore's readers underneath)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from runstore import index_rows, launch_files, run_reads, run_store, run_watch, safe_files, tb_logdir
from runstore.run_folder import CONFIG, RunFolder
from runstore.run_store import RunInfo

WATCH_POLL_S = run_watch.POLL_S  # how often the run watcher looks at the runs root
StatusOf = Any  # a callable Path -> status dict (the page's `run_status`: a launched process checked)


def runs_root() -> Path:
    """The folder every run folder lives in (JAXDASH_RUNS, or the default)."""
    return run_store.runs_root()


def run_folders(root: Path) -> list[Path]:
    """The run folders directly under `root` (no links, no hidden names); [] when it cannot be listed."""
    return run_store.run_folders(root)


def is_run_folder(path: Path) -> bool:
    """Whether `path` is a real folder (not a link, not a FIFO): one a page may read as a run."""
    return safe_files.is_real_dir(path)


def list_runs(root: Path, status_of: StatusOf) -> list[RunInfo]:
    """Every run under `root`, each status from `status_of`; an ended run's files are re-read only when changed."""
    return run_reads.list_runs(root, status_of)


def read_run(d: Path) -> RunInfo | None:
    """The run in folder `d`, validated (damaged: a status naming the file); None when `d` holds no run."""
    return run_store.read_run(d)


def read_run_cached(d: Path, status_of: StatusOf) -> RunInfo | None:
    """`read_run` with `status_of`'s status, an ended run as last read while its files are unchanged."""
    return run_reads.read_run(d, status_of)


def damaged_run(d: Path, message: str, name: str | None = None, task: str = "?") -> RunInfo:
    """A listing entry for a run whose files are unusable: state "damaged" and `message`."""
    return run_store.damaged_run(d, message, name, task)


def launch_info(run_dir: Path) -> dict[str, Any]:
    """What the page wrote when it launched a process in `run_dir` ({} when none, or damaged)."""
    return launch_files.launch_info(run_dir)


def launch_problem(run_dir: Path) -> str | None:
    """Why the launch file of `run_dir` cannot be used, when it is there but unreadable; else None."""
    if launch_files.launch_info(run_dir) == {} and RunFolder(run_dir).has_launch():
        return launch_files.launch_damage(run_dir)
    return None


def has_config(run_dir: Path) -> bool:
    """Whether the run's process has written its config (a launched population has not, until its members run)."""
    return RunFolder(run_dir).has_config()


def has_process_output(run_dir: Path) -> bool:
    """Whether the run has output of a process the page started (its process log)."""
    return launch_files.process_log(run_dir).exists()


def stop_requested(run_dir: Path) -> bool:
    """Whether a stop was asked for and the run has not taken it yet."""
    return RunFolder(run_dir).stop_requested()


def run_command(run_dir: Path) -> list[str] | None:
    """The command the run's config records (a list of strings), or None."""
    try:
        doc = RunFolder(run_dir).checked_config()
        return run_store.validate_config(doc, CONFIG).get("command") if doc is not None else None
    except run_store.DamagedRunFile:
        return None


def hosts(run_dir: Path) -> tuple[list[dict[str, Any]], str | None]:
    """A multi-host run's processes (heartbeat, state) and a problem reading them; ([], None) for one process."""
    return RunFolder(run_dir).hosts()


def runs_signature(root: Path) -> Any:
    """The run watcher's signature of `root`: each run folder and whether it is active. Equal while no run
    started, ended or went (a background thread keeps it; reading it reads no file)."""
    return run_watch.watcher(root).current


def run_watcher(root: Path) -> run_watch.Watcher:
    """The server's one watcher of `root` (its `current` signature, `stopped` event, logdir watch)."""
    return run_watch.watcher(root)


def logdir() -> Path | None:
    """The TensorBoard logdir the dashboard mirrors (JAXDASH_LOGDIR), or None."""
    return tb_logdir.logdir()


def mirror_root(root: Path) -> Path:
    """The folder of the logdir's mirrored runs under the runs root `root`."""
    return tb_logdir.mirror_root(root)


def logdir_runs(root: Path, status_of: StatusOf) -> list[RunInfo]:
    """The logdir's mirrored runs ([] without a logdir)."""
    return run_reads.list_runs(tb_logdir.mirror_root(root), status_of) if tb_logdir.logdir() is not None else []


def logdir_folders(root: Path) -> set[Path]:
    """The folders of the logdir's own runs (when the logdir is the runs root, they are no damaged runs of ours)."""
    where = tb_logdir.logdir() or root
    return tb_logdir.covered(where, tb_logdir.find_runs(where))


def run_folder_count(root: Path) -> int:
    """How many run folders the root holds, the logdir's mirrors included."""
    mirrors = root / index_rows.LOGDIR_MIRRORS  # the index's name of the mirrors' folder (tb_logdir.MIRROR)
    return len(run_store.run_folders(root)) + (len(run_store.run_folders(mirrors)) if mirrors.is_dir() else 0)


def run_under_root(run_id: str) -> Path | None:
    """The folder of run `run_id` directly under the runs root when it is a real folder; else None. The id must
    already be a plain name (dashboard/server/run_lookup.py checks it)."""
    folder = run_store.runs_root() / run_id
    return folder if safe_files.is_real_dir(folder) else None


def is_link(path: Path) -> bool:
    """Whether `path` is a symbolic link (listed as damaged, never followed)."""
    return os.path.islink(path)


def writer_status(run_dir: Path) -> dict[str, Any]:
    """The status of a run whose writer is not a process of ours (`abilities(run_dir).stoppable` is False: a
    TensorBoard log's run), as its mirror recorded it; no process is checked."""
    return tb_logdir.status(run_dir)
