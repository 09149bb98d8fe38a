"""The state of a run the page launched: its process, its place in the run queue, a population's members.

A run the page starts has a folder with launch.json (and process.log) before its process writes
config.json and status.json; a resume from the page is "starting" until the new process takes over
status.json; a population launched from the page stands for its members once they exist. No drawing here.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from dashboard.processes import page_queue
from dashboard.reading import provider
from runstore import launch_files, processes, run_log, run_reads, run_states, run_store
from runstore.run_folder import RunFolder

RESUMABLE_STATES = run_states.RESUMABLE


def run_status(run_dir: Path) -> dict[str, Any]:
    """status.json via `RunFolder.status`, plus "starting" for launched runs that have not begun.

    A launched process that died before writing its status is reported as
    "failed" with the last line of its log as the message. A run being resumed
    from the page is "starting" until the new process takes over status.json; if
    that process died first, "resume_error" holds the last line of its log.
    """
    run_dir = Path(run_dir)
    if not provider.abilities(run_dir).stoppable:  # a TensorBoard log's run: no process of ours to check
        return provider.writer_status(run_dir)
    status = processes.with_stall(RunFolder(run_dir).status(), time.time())  # "stalled since" (SIGSTOP: 3 s)
    info = launch_files.launch_info(run_dir)
    if status.get("state"):
        resume = info.get("resume") or {}
        if status["state"] in RESUMABLE_STATES and resume.get("launched", 0) > (status.get("updated") or 0):
            waiting = page_queue.queue_status(resume)
            if waiting is not None:  # queued, or cancelled there: the run stays as it was
                return {**status, **waiting, "resuming": True} if waiting["state"] == "queued" else status
            if run_store.pid_alive(resume.get("pid")):
                return {**status, "state": "starting", "resuming": True}
            status["resume_error"] = run_log.last_lines(run_dir, 1) or "the process exited without output"
        return status
    # A page start still waiting in the run queue (this fills in its pid once the queue started it).
    waiting = page_queue.queue_status(info)
    if waiting is not None:
        return waiting
    if run_store.pid_alive(info.get("pid")):
        return {"state": "starting", "pid": info.get("pid"), "started": info.get("launched")}
    ended = _population_outcome(info)
    if ended is not None:
        return ended
    if RunFolder(run_dir).has_config() or info:
        last = run_log.last_lines(run_dir, 1) or "no output"
        return {
            "state": "failed",
            "message": f"The training process exited before it started: {last}",
            "started": info.get("launched"),
        }
    return {"state": "starting"}


def _population_outcome(info: dict[str, Any]) -> dict[str, Any] | None:
    """The state of a population launched from the page whose process has ended: its members' state.

    None when `info` is not a population's launch or no member was written (then it failed to start).
    """
    if not info.get("population"):
        return None
    runs = run_reads.list_runs()
    group = info.get("group")
    found = [r for r in runs if group and r.status.get("group") == group] or population_members(info, runs)
    if not found:
        return None
    states = [str(r.status.get("state")) for r in found]
    common = max(set(states), key=states.count)
    return {
        "state": common,
        "group": found[0].status.get("group"),
        "started": info.get("launched"),
        "members": len(found),
    }


def population_members(info: dict[str, Any], runs: list[run_store.RunInfo]) -> list[run_store.RunInfo]:
    """The members written by the population process of a launch.json (same pid, created after the launch)."""
    page_queue.queue_status(info)  # a start that waited in the run queue: its pid, once the queue started it
    pid, launched = info.get("pid"), info.get("launched", 0.0)
    if pid is None:
        return []
    found = [r for r in runs if r.status.get("group") and r.status.get("pid") == pid and r.created >= launched - 1]
    return sorted(found, key=lambda r: r.status.get("member") or 0)


def launched_population(run_id: str | None, runs: list[run_store.RunInfo]) -> run_store.RunInfo | None:
    """Member 0 of the population launched as `run_id` (a launch directory), once it exists."""
    if not run_id or "/" in run_id or run_id.startswith("."):
        return None
    info = launch_files.launch_info(run_store.runs_root() / run_id)
    found = population_members(info, runs) if info.get("population") else []
    return found[0] if found else None
