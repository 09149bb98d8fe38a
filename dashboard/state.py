"""What the pages know about runs: always read from the run store, cached per session.

Session state only holds caches (metric offsets, parsed records) and the
current selection; losing it (reload, second tab) loses nothing, because the
next poll rebuilds it from the run directories.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

import streamlit as st

from dashboard import launcher
from training import run_store

ACTIVE_STATES = ("starting", "running")
LIVE_REFRESH_S = 0.5  # fragment interval while a run is active (>= 1 refresh/s with margin)


def runs_root() -> Path:
    """The runs root of this dashboard (JAXDASH_RUNS or ./runs)."""
    return launcher.runs_root()


RESUMABLE_STATES = ("stopped", "crashed")


def run_status(run_dir: Path) -> dict[str, Any]:
    """status.json via `run_store.read_status`, plus "starting" for launched runs that have not begun.

    A launched process that died before writing its status is reported as
    "failed" with the last line of its log as the message. A run being resumed
    from the page is "starting" until the new process takes over status.json; if
    that process died first, "resume_error" holds the last line of its log.
    """
    run_dir = Path(run_dir)
    status = run_store.read_status(run_dir)
    info = launcher.launch_info(run_dir)
    if status.get("state"):
        resume = info.get("resume") or {}
        if status["state"] in RESUMABLE_STATES and resume.get("launched", 0) > (status.get("updated") or 0):
            if run_store.pid_alive(resume.get("pid")):
                return {**status, "state": "starting", "resuming": True}
            status["resume_error"] = launcher.log_tail(run_dir, 1) or "the process exited without output"
        return status
    if run_store.pid_alive(info.get("pid")):
        return {"state": "starting", "pid": info.get("pid"), "started": info.get("launched")}
    if (run_dir / "config.json").exists() or info:
        last = launcher.log_tail(run_dir, 1) or "no output"
        return {
            "state": "failed",
            "message": f"The training process exited before it started: {last}",
            "started": info.get("launched"),
        }
    return {"state": "starting"}


def list_runs() -> list[run_store.RunInfo]:
    """All runs, newest first, including page-launched runs whose process has not written config.json yet.

    A population launched from the page stands as one such run until its members appear.
    """
    root = runs_root()
    runs = run_store.list_runs(root)
    for r in runs:
        r.status = run_status(r.path)
    known = {r.run_id for r in runs}
    pending = []
    if root.is_dir():
        for d in root.iterdir():
            info = launcher.launch_info(d) if d.is_dir() and d.name not in known else None
            if info and info.get("population") and not info.get("group"):
                found = population_members(info, runs)
                if found:  # remember it, so the launch stays hidden when its members are deleted later
                    with contextlib.suppress(OSError):  # another session may be writing the same note
                        run_store.atomic_write_json(d / "launch.json", {**info, "group": found[0].status["group"]})
                    continue
            if info and not info.get("group"):
                run = run_store.RunInfo(
                    d.name, d, info.get("name", d.name), info.get("task", "?"), {}, {}, info.get("launched", 0.0)
                )
                run.status = run_status(d)
                pending.append(run)
    runs += pending
    # Newest first; a population's members stay together, in member order.
    first: dict[str, float] = {}
    for r in runs:
        if r.status.get("group"):
            first[r.status["group"]] = min(first.get(r.status["group"], r.created), r.created)
    return sorted(runs, key=lambda r: (-first.get(r.status.get("group"), r.created), r.status.get("member") or 0))


def population_members(info: dict[str, Any], runs: list[run_store.RunInfo]) -> list[run_store.RunInfo]:
    """The members written by the population process of a launch.json (same pid, created after the launch)."""
    pid, launched = info.get("pid"), info.get("launched", 0.0)
    found = [r for r in runs if r.status.get("group") and r.status.get("pid") == pid and r.created >= launched - 1]
    return sorted(found, key=lambda r: r.status.get("member") or 0)


def is_active(status: dict[str, Any]) -> bool:
    """True while a run is starting or running."""
    return status.get("state") in ACTIVE_STATES


def poll_metrics(run_dir: Path) -> list[dict[str, Any]]:
    """All metric records of a run, reading only the bytes appended since this session's last poll."""
    cache: dict[str, dict[str, Any]] = st.session_state.setdefault("_metrics_cache", {})
    key = str(run_dir)
    entry = cache.get(key)
    size = _size(Path(run_dir) / "metrics.jsonl")
    if entry is None or size < entry["offset"]:  # new, or the file was replaced: start over
        entry = cache[key] = {"offset": 0, "records": []}
    if size > entry["offset"]:
        new, entry["offset"] = run_store.read_metrics(Path(run_dir), entry["offset"])
        entry["records"].extend(new)
    return entry["records"]


def _size(path: Path) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


@st.cache_data(max_entries=64, show_spinner=False)
def _read_all_metrics(path: str, size: int, mtime: float) -> list[dict[str, Any]]:
    return run_store.read_metrics(Path(path), 0)[0]


def all_metrics(run_dir: Path) -> list[dict[str, Any]]:
    """Every record of a run, shared across sessions and re-read only when the file changed."""
    path = Path(run_dir) / "metrics.jsonl"
    try:
        st_ = os.stat(path)
    except OSError:
        return []
    return _read_all_metrics(str(run_dir), st_.st_size, st_.st_mtime)


def read_artifact(run_dir: Path, name: str) -> Any:
    """A JSON artifact of a run, or None."""
    return run_store.read_json(Path(run_dir) / "artifacts" / name)


def select_run(runs: list[run_store.RunInfo]) -> run_store.RunInfo | None:
    """The run a page shows: ?run=<id>, else the last one chosen here, else the newest active, else the newest.

    The id of a population's launch stands for its first member once the members exist.
    """
    by_id = {r.run_id: r for r in runs}
    for candidate in (st.query_params.get("run"), st.session_state.get("current_run")):
        if candidate in by_id:
            return by_id[candidate]
        first = launched_population(candidate, runs)
        if first is not None:
            return first
    active = [r for r in runs if is_active(r.status)]
    return (active or runs or [None])[0]


def launched_population(run_id: str | None, runs: list[run_store.RunInfo]) -> run_store.RunInfo | None:
    """Member 0 of the population launched as `run_id` (a launch directory), once it exists."""
    if not run_id or "/" in run_id or run_id.startswith("."):
        return None
    info = launcher.launch_info(runs_root() / run_id)
    found = population_members(info, runs) if info.get("population") else []
    return found[0] if found else None


def remember_run(run_id: str) -> None:
    """Make `run_id` the current run for every page (and the URL, so a reload keeps it)."""
    st.session_state["current_run"] = run_id
    st.query_params["run"] = run_id


@st.cache_resource(show_spinner=False)
def _tensorboard(logdir: str) -> launcher.TensorBoard:
    return launcher.start_tensorboard(Path(logdir))


def tensorboard_url() -> str:
    """URL of this server's TensorBoard over the runs root, started on first use (restarted if it died)."""
    tb = _tensorboard(str(runs_root()))
    if not tb.alive():
        _tensorboard.clear()
        tb = _tensorboard(str(runs_root()))
    return tb.url
