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
from dashboard.reading import run_lister
from runstore import launch_files, run_reads, run_states, run_store, run_watch, safe_files, tb_logdir
from runstore.run_folder import CONFIG, RunFolder

ACTIVE_STATES = run_states.ACTIVE


def all_runs() -> list[run_store.RunInfo]:
    """All runs, newest first, including page-launched runs whose process has not written config.json yet.

    A population launched from the page stands as one such run until its members appear. A big root's list
    comes from its background lister (dashboard/reading/run_lister.py) while no run appeared, ended or went
    since it was made, each active run's status read again; a TensorBoard logdir's mirrors as its watch has
    them (`logdir_current`).
    """
    root = run_store.runs_root()
    if tb_logdir.logdir() is not None:
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
    run_lister.start(run_store.runs_root(), READS, first=True)


def scan(root: Path) -> list[run_store.RunInfo]:
    """`all_runs` of `root` listed now (no Streamlit: the lister's thread runs it too)."""
    runs = run_reads.list_runs(root, run_status)  # an ended run's files are re-read only when changed
    known = {r.run_id for r in runs}
    pending = []
    try:
        entries = [d for d in root.iterdir() if d.name not in known and not d.name.startswith(".")]
    except OSError:
        entries = []
    for d in entries:
        info = launch_files.launch_info(d) if safe_files.is_real_dir(d) else None
        if info == {} and RunFolder(d).has_launch():
            pending.append(run_store.damaged_run(d, launch_files.launch_damage(d)))
            continue
        if info and info.get("population") and not info.get("group"):
            found = population_members(info, runs)
            if found:  # remember it, so the launch stays hidden when its members are deleted later
                with contextlib.suppress(OSError):  # another session may be writing the same note
                    launch_files.write_launch(d, {**info, "group": found[0].status["group"]})
                continue
        if info and not info.get("group"):
            run = run_store.RunInfo(
                d.name, d, info.get("name", d.name), info.get("task", "?"), {}, {}, info.get("launched", 0.0)
            )
            run.status = run_status(d)
            pending.append(run)
    logged = run_reads.list_runs(tb_logdir.mirror_root(root), run_status) if tb_logdir.logdir() is not None else []
    if logged and any(r.damaged for r in runs):  # the logdir may be the runs root: its TensorBoard folders are
        # those runs, not damaged ones
        foreign = tb_logdir.covered(tb_logdir.logdir() or root, tb_logdir.find_runs(tb_logdir.logdir() or root))
        runs = [r for r in runs if not (r.damaged and r.path in foreign)]
    return ordered(runs + pending + logged)


def ordered(runs: list[run_store.RunInfo]) -> list[run_store.RunInfo]:
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
    logdir = tb_logdir.logdir()
    watch = run_watch.watcher(root).logdir_watch if logdir is not None else None
    if watch is None:
        return
    watch.request()
    if watch.error:
        st.warning(
            f"TensorBoard logdir {safe_text.code(logdir)}: {safe_text.md(watch.error)}", icon=":material/warning:"
        )
    elif watch.reading:
        mirrored = len(run_store.run_folders(tb_logdir.mirror_root(root)))
        st.caption(f"Reading the TensorBoard logdir {safe_text.code(logdir)}: {mirrored} runs mirrored so far.")


def read_one(d: Path) -> run_store.RunInfo | None:
    """The run of one folder as `scan` lists it (None: no run of its own there, a page launch's folder)."""
    run = run_store.read_run(d)
    if run is not None and not run.damaged:  # a damaged run keeps the message that says which file is wrong
        run.status = run_status(d)
    return run


READS = run_lister.Reads(scan, read_one, ordered)


def is_active(status: dict[str, Any]) -> bool:
    """True while a run is starting or running."""
    return status.get("state") in ACTIVE_STATES


def run_command(run_dir: Path) -> list[str] | None:
    """The command of config.json (a list of strings), or None."""
    try:
        doc = RunFolder(run_dir).checked_config()
        return run_store.validate_config(doc, CONFIG).get("command") if doc is not None else None
    except run_store.DamagedRunFile:
        return None
