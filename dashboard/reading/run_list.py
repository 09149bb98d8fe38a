"""The page's list of runs: every run folder under the runs root, the runs the page launched that have not
written config.json yet, and a TensorBoard logdir's mirrored runs; newest first, a population together."""

from __future__ import annotations

import contextlib
import dataclasses
import time
from pathlib import Path
from typing import Any

import streamlit as st

from dashboard.panels import safe_text
from dashboard.processes.launch_status import population_members, run_status
from dashboard.reading import provider, run_lister
from runstore import launch_files, run_states

ACTIVE_STATES = run_states.ACTIVE


def all_runs() -> list[provider.RunInfo]:
    """All runs, newest first, including page-launched runs whose process has not written config.json yet.

    A population launched from the page stands as one such run until its members appear. A big root's list
    comes from its background lister (dashboard/reading/run_lister.py) while no run appeared, ended or went
    since it was made, each active run's status read again; a TensorBoard logdir's mirrors as its watch has
    them (`logdir_current`).
    """
    root = provider.runs_root()
    if provider.logdir() is not None:
        logdir_current(root)
    kept = run_lister.current(root)
    if kept is not None:
        return [dataclasses.replace(r, status=run_status(r.path)) if is_active(r.status) else r for r in kept]
    started = time.thread_time()  # CPU time: another process's load makes no small root big
    runs = scan(root)
    if time.thread_time() - started > run_lister.BIG_S:
        run_lister.start(root, READS)
    return runs


def prefetch() -> None:
    """Start the runs root's background lister once a server (the first page run): a big root's list is then
    ready when a page asks for it."""
    run_lister.start(provider.runs_root(), READS, first=True)


def scan(root: Path) -> list[provider.RunInfo]:
    """`all_runs` of `root` listed now (no Streamlit: the lister's thread runs it too)."""
    runs = provider.list_runs(root, run_status)  # an ended run's files are re-read only when changed
    known = {r.run_id for r in runs}
    pending = []
    try:
        entries = [d for d in root.iterdir() if d.name not in known and not d.name.startswith(".")]
    except OSError:
        entries = []
    for d in entries:
        info = provider.launch_info(d) if provider.is_run_folder(d) else None
        problem = provider.launch_problem(d) if info == {} else None
        if problem is not None:
            pending.append(provider.damaged_run(d, problem))
            continue
        if info and info.get("population") and not info.get("group"):
            found = population_members(info, runs)
            if found:  # remember it, so the launch stays hidden when its members are deleted later
                with contextlib.suppress(OSError):  # another session may be writing the same note
                    launch_files.write_launch(d, {**info, "group": found[0].status["group"]})
                continue
        if info and not info.get("group"):
            run = provider.RunInfo(
                d.name, d, info.get("name", d.name), info.get("task", "?"), {}, {}, info.get("launched", 0.0)
            )
            run.status = run_status(d)
            pending.append(run)
    logged = provider.logdir_runs(root, run_status)
    if logged and any(r.damaged for r in runs):  # the logdir may be the runs root: its TensorBoard folders are
        # those runs, not damaged ones
        foreign = provider.logdir_folders(root)
        runs = [r for r in runs if not (r.damaged and r.path in foreign)]
    return ordered(runs + pending + logged)


def ordered(runs: list[provider.RunInfo]) -> list[provider.RunInfo]:
    """Newest first; a population's members together, in member order."""
    first: dict[str, float] = {}
    for r in runs:
        if r.status.get("group"):
            first[r.status["group"]] = min(first.get(r.status["group"], r.created), r.created)
    return sorted(runs, key=lambda r: (-first.get(r.status.get("group"), r.created), r.status.get("member") or 0))


def logdir_current(root: Path) -> None:
    """Ask the server's logdir watch (runstore/logdir_watch.py, a background thread) for a check now and wait for
    it a bounded time: the page then reads the mirrors as they are, and never syncs itself. Says so while the
    watch's first sync is under way, and why when the logdir cannot be read (its runs so far stay listed)."""
    logdir = provider.logdir()
    watch = provider.run_watcher(root).logdir_watch if logdir is not None else None
    if watch is None:
        return
    watch.request()
    if watch.error:
        st.warning(
            f"TensorBoard logdir {safe_text.code(logdir)}: {safe_text.md(watch.error)}", icon=":material/warning:"
        )
    elif watch.reading:
        mirrored = len(provider.run_folders(provider.mirror_root(root)))
        st.caption(f"Reading the TensorBoard logdir {safe_text.code(logdir)}: {mirrored} runs mirrored so far.")


def read_one(d: Path) -> provider.RunInfo | None:
    """The run of one folder as `scan` lists it (None: no run of its own there, a page launch's folder)."""
    run = provider.read_run(d)
    if run is not None and not run.damaged:  # a damaged run keeps the message that says which file is wrong
        run.status = run_status(d)
    return run


READS = run_lister.Reads(scan, read_one, ordered)


def is_active(status: dict[str, Any]) -> bool:
    """True while a run is starting or running."""
    return status.get("state") in ACTIVE_STATES


def run_command(run_dir: Path) -> list[str] | None:
    """The command of config.json (a list of strings), or None."""
    return provider.run_command(run_dir)
