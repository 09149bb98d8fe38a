"""What the pages know about runs: always read from the run store, cached per session.

Session state only holds caches (metric offsets, parsed records) and the
current selection; losing it (reload, second tab) loses nothing, because the
next poll rebuilds it from the run directories.
"""

from __future__ import annotations

import contextlib
import functools
import time
import urllib.parse
from collections.abc import Callable
from pathlib import Path
from typing import Any

import streamlit as st

from dashboard import refresh_timings
from dashboard.panels import refresh_trigger
from dashboard.processes import page_queue, tensorboard_server
from dashboard.server import changes_route
from runstore import (
    launch_files,
    processes,
    run_log,
    run_reads,
    run_states,
    run_store,
    run_watch,
    safe_files,
    tb_logdir,
)
from runstore.metrics import metric_csv
from runstore.metrics.metric_table import MetricTable
from runstore.run_folder import RunFolder

ACTIVE_STATES = run_states.ACTIVE
LIVE_REFRESH_S = refresh_timings.seconds("live_rerun")


RESUMABLE_STATES = run_states.RESUMABLE


def run_status(run_dir: Path) -> dict[str, Any]:
    """status.json via `run_store.read_status`, plus "starting" for launched runs that have not begun.

    A launched process that died before writing its status is reported as
    "failed" with the last line of its log as the message. A run being resumed
    from the page is "starting" until the new process takes over status.json; if
    that process died first, "resume_error" holds the last line of its log.
    """
    run_dir = Path(run_dir)
    if tb_logdir.is_mirror(run_dir):  # a TensorBoard log's run: no process of ours to check
        return tb_logdir.status(run_dir)
    status = processes.with_stall(run_store.read_status(run_dir), time.time())  # "stalled since" (SIGSTOP: 3 s)
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


def all_runs() -> list[run_store.RunInfo]:
    """All runs, newest first, including page-launched runs whose process has not written config.json yet.

    A population launched from the page stands as one such run until its members appear.
    """
    root = run_store.runs_root()
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
    logged = _logdir_runs(root)
    if logged:  # the logdir may be the runs root: its TensorBoard folders are those runs, not damaged ones
        foreign = tb_logdir.covered(tb_logdir.logdir() or root, tb_logdir.find_runs(tb_logdir.logdir() or root))
        runs = [r for r in runs if not (r.damaged and r.path in foreign)]
    runs += pending + logged
    # Newest first; a population's members stay together, in member order.
    first: dict[str, float] = {}
    for r in runs:
        if r.status.get("group"):
            first[r.status["group"]] = min(first.get(r.status["group"], r.created), r.created)
    return sorted(runs, key=lambda r: (-first.get(r.status.get("group"), r.created), r.status.get("member") or 0))


def _logdir_runs(root: Path) -> list[run_store.RunInfo]:
    """The runs of the TensorBoard logdir this dashboard reads (--logdir), brought up to date first."""
    logdir = tb_logdir.logdir()
    if logdir is None:
        return []
    try:
        tb_logdir.sync_if_due(logdir, root)
    except OSError as exc:  # an unreadable logdir never breaks the page; its runs so far stay listed
        st.warning(f"TensorBoard logdir `{logdir}`: {exc}", icon=":material/warning:")
    return run_reads.list_runs(tb_logdir.mirror_root(root), run_status)


WATCH_S = refresh_timings.seconds("runs_watch")
# The browser asks for the list's signature this often (served with the change route): at 1 s, with the
# pages' other pollers at 2 s while a run writes all the time, it alone made each open page poll
# every second (Live + Run detail + Runs: Chromium 0.35 s and the server 0.1 s of CPU a minute each).
WATCH_POLL_MS = refresh_timings.ms("runs_watch_poll")


def check_runs() -> None:
    """Rerun the whole page when the list of runs changed since this page's run noted it (watch_runs).

    runstore/run_watch.py keeps the signature current (run folders and whether each is active; a
    background thread), so this is a comparison. starting -> running is no change: the pages' own
    refresh draws it.
    """
    if run_watch.watcher(run_store.runs_root()).current != st.session_state.get("_runs_seen"):
        st.rerun(scope="app")


def watch_runs() -> None:
    """Rerun the whole page when the list of runs changed, whoever changed it (a CLI run, another tab).

    Call once per full page run, first: it notes the runs as this run saw them, and a fragment that
    draws nothing runs check_runs. Every list of runs (pickers, tables, "Training now") and every
    page's refresh then follow a run that appeared, started, ended or was deleted. Served with the
    change route (dashboard/server/changes_route.py), the browser polls the list's signature and the
    fragment reruns only when it changed: a page left open costs no reruns. Without it (AppTest, plain
    app.py), the fragment reruns every WATCH_S.
    """
    st.session_state["_runs_seen"] = seen = run_watch.watcher(run_store.runs_root()).current
    if changes_route.ROUTE_ON:

        def check_on_change() -> None:
            gap_ms = int(WATCH_S * 1000)  # a page's own panel follows its runs; the list can wait a second
            refresh_trigger.rerun_on_change([], key="runs_watch", gap_ms=gap_ms, listing=seen, poll_ms=WATCH_POLL_MS)
            check_runs()

        st.fragment(check_on_change)()
    else:
        st.fragment(check_runs, run_every=WATCH_S)()


PAGE_KEY = "_page"  # session state: the url_path of the page this session's last full run drew


def leave_page(url_path: str) -> None:
    """Note the page a st.switch_page goes to, before calling it (see PAGE_KEY)."""
    st.session_state[PAGE_KEY] = url_path


def run_command(run_dir: Path) -> list[str] | None:
    """The command of config.json (a list of strings), or None."""
    try:
        doc = RunFolder(run_dir).checked_config()
        return run_store.validate_config(doc).get("command") if doc is not None else None
    except run_store.DamagedRunFile:
        return None


def population_members(info: dict[str, Any], runs: list[run_store.RunInfo]) -> list[run_store.RunInfo]:
    """The members written by the population process of a launch.json (same pid, created after the launch)."""
    page_queue.queue_status(info)  # a start that waited in the run queue: its pid, once the queue started it
    pid, launched = info.get("pid"), info.get("launched", 0.0)
    if pid is None:
        return []
    found = [r for r in runs if r.status.get("group") and r.status.get("pid") == pid and r.created >= launched - 1]
    return sorted(found, key=lambda r: r.status.get("member") or 0)


def is_active(status: dict[str, Any]) -> bool:
    """True while a run is starting or running."""
    return status.get("state") in ACTIVE_STATES


@st.cache_resource(max_entries=64, show_spinner=False)
def _metric_table(run_dir: str) -> MetricTable:
    return MetricTable()


def metrics(run_dir: Path) -> MetricTable:
    """A run's metrics as bounded columns, shared by every session and read only where the file grew."""
    logdir = tb_logdir.logdir()
    if logdir is not None and tb_logdir.is_mirror(run_dir):  # new events of a TensorBoard log first
        with contextlib.suppress(OSError):
            tb_logdir.sync_if_due(logdir, run_store.runs_root())
    return _metric_table(str(run_dir)).update(Path(run_dir))


def metrics_csv(run_dir: Path) -> Callable[[], bytes]:
    """A download button's data: the CSV of every record, built from the file only when clicked."""
    return functools.partial(metric_csv.metrics_csv, Path(run_dir))


def select_run(runs: list[run_store.RunInfo]) -> run_store.RunInfo | None:
    """The run a page shows: ?run=<id>, else the last one chosen here, else the newest active, else the newest.

    The id of a population's launch stands for its first member once the members exist.
    """
    by_id = {r.run_id: r for r in runs}
    asked = st.query_params.get("run")
    for candidate in (asked, st.session_state.get("current_run")):
        if candidate in by_id:
            return by_id[candidate]
        first = launched_population(candidate, runs)
        if first is not None:
            return first
        if candidate and candidate == asked:  # never silently another run
            st.warning(
                f"No run `{candidate}` under `{run_store.runs_root()}`; showing another run.", icon=":material/warning:"
            )
    active = [r for r in runs if is_active(r.status)]
    return (active or runs or [None])[0]


def launched_population(run_id: str | None, runs: list[run_store.RunInfo]) -> run_store.RunInfo | None:
    """Member 0 of the population launched as `run_id` (a launch directory), once it exists."""
    if not run_id or "/" in run_id or run_id.startswith("."):
        return None
    info = launch_files.launch_info(run_store.runs_root() / run_id)
    found = population_members(info, runs) if info.get("population") else []
    return found[0] if found else None


def remember_run(run_id: str) -> None:
    """Make `run_id` the current run for every page (and the URL, so a reload keeps it)."""
    st.session_state["current_run"] = run_id
    st.query_params["run"] = run_id


def server_address() -> str:
    """The address this server listens on ("" when unset: every interface)."""
    return str(st.get_option("server.address") or "")


def is_shared() -> bool:
    """True when others can reach this server (its address is not loopback)."""
    return not tensorboard_server.is_loopback(server_address())


@st.cache_resource(show_spinner=False)
def _tensorboard(logdir: str, host: str) -> tensorboard_server.TensorBoard:
    return tensorboard_server.start_tensorboard(Path(logdir), host=host)


def tensorboard_url() -> str:
    """URL of this server's TensorBoard over the runs root, started on first use (restarted if it died).

    TensorBoard listens where the dashboard does; when that is not loopback, the link uses the
    host name this browser reached the dashboard by.
    """
    host = server_address() or "0.0.0.0"
    tb = _tensorboard(str(run_store.runs_root()), host)
    if not tb.alive():
        _tensorboard.clear()
        tb = _tensorboard(str(run_store.runs_root()), host)
    if not is_shared():
        return tb.url
    seen = urllib.parse.urlsplit(st.context.url or "").hostname
    parts = urllib.parse.urlsplit(tb.url)
    return parts._replace(netloc=f"{seen}:{parts.port}").geturl() if seen else tb.url
