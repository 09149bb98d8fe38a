"""The Runs page over the run index: a running run that makes no progress is "stalled" in the status filter's
choices, its selection and the query language, as its row shows it, and "running" leaves it out; a population's
members sit together in the default order, where its newest member puts them, on every page alike.

Roots are written with the project's own run-folder writers; times are fixed (a `now` passed in), never slept for.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from runstore import atomic, index_pages, index_reader, processes, run_index, run_store
from runstore.index_pages import Narrow
from runstore.run_folder import RunFolder
from tests.apptest_pages import app


def _run(root: Path, name: str, created: float, state: str = "finished", age: float = 0.0, **extra: object) -> Path:
    """A run folder as the training CLI writes it, created at `created`; a running one's process is this test's,
    and its status.json was last written `age` seconds ago (a stalled run is one whose writes stopped)."""
    d = run_store.new_run_dir(root, "mnist", name)
    member = {k: extra.pop(k) for k in ("group", "member") if k in extra}
    RunFolder(d).write_config("mnist", {"lr": 0.1}, name=name, task_spec="mnist", **member)
    RunFolder(d).merge_config(created=created)
    status = RunFolder(d).write_status(state=state, pid=os.getpid(), host=socket.gethostname(), **member, **extra)
    if age:
        atomic.atomic_write_json(RunFolder(d).status_path, {**status, "updated": status["updated"] - age})
    return d


def _updated(d: Path) -> float:
    return RunFolder(d).status()["updated"]


def _names(runs: list) -> list[str]:
    return [r.name for r in runs]


def test_a_stalled_run_is_a_state_to_pick_and_running_leaves_it_out(tmp_path: Path) -> None:
    moving = _run(tmp_path, "moving", 1.0, "running", phase="training")
    stuck = _run(tmp_path, "stuck", 2.0, "running", age=60, phase="training")
    _run(tmp_path, "compiling", 3.0, "running", age=60, phase="compiling")  # no writes while compiling: not stalled
    done = _run(tmp_path, "done", 4.0, age=600)  # ended: never stalled
    assert run_index.update(tmp_path).read == 4
    now = _updated(moving) + 1  # stuck's last write was 61 s before
    assert index_pages.choices(tmp_path, now)["states"] == ["finished", "running", "stalled"]
    stalled, running = Narrow(states=["stalled"], now=now), Narrow(states=["running"], now=now)
    assert _names(index_pages.page(tmp_path, narrow=stalled).runs) == ["stuck"]
    assert _names(index_pages.page(tmp_path, narrow=running).runs) == ["compiling", "moving"]
    assert index_pages.count(tmp_path, narrow=Narrow(states=["running", "stalled"], now=now)) == 3
    # The query language reads the same states, and sorts by them.
    at = Narrow(now=now)
    assert _names(index_pages.matching(tmp_path, 'state = "stalled"', at)) == ["stuck"]
    assert _names(index_pages.matching(tmp_path, 'state in ("running", "finished")', at)) == ["done", "compiling", "moving"]  # fmt: skip
    assert index_pages.matching_ids(tmp_path, 'not (state = "running")', at, order="+state") == [done.name, stuck.name]
    # A verdict of the clock alone: 10 s after stuck's last write, nothing has stalled yet.
    early = _updated(stuck) + 10
    assert index_pages.choices(tmp_path, early)["states"] == ["finished", "running"]
    assert index_pages.count(tmp_path, narrow=Narrow(states=["running"], now=early)) == 3
    # The client's Api speaks W&B's states: status.json's own.
    assert {r.name for r in index_reader.search(tmp_path, 'state = "running"')} == {"moving", "stuck", "compiling"}


def test_a_process_held_stopped_reads_stalled_after_a_few_seconds(tmp_path: Path) -> None:
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        d = _run(tmp_path, "held", 1.0, "running", phase="training")
        RunFolder(d).write_status(pid=child.pid)
        os.kill(child.pid, signal.SIGSTOP)
        deadline = time.monotonic() + 30
        while not processes.pid_stopped(child.pid):  # the kernel stops it asynchronously
            assert time.monotonic() < deadline, "the child never read stopped"
            time.sleep(0.01)
        run_index.update(tmp_path)  # an active run is re-read at every update: it sees the stop
        now = _updated(d) + processes.STOPPED_S + 2  # well short of STALL_S
        assert index_pages.count(tmp_path, narrow=Narrow(states=["stalled"], now=now)) == 1
        os.kill(child.pid, signal.SIGCONT)
        while processes.pid_stopped(child.pid):
            assert time.monotonic() < deadline, "the child never read continued"
            time.sleep(0.01)
        run_index.update(tmp_path)
        assert index_pages.count(tmp_path, narrow=Narrow(states=["running"], now=now)) == 1
    finally:
        child.kill()
        child.wait(timeout=30)


def test_an_index_of_the_schema_before_is_rebuilt_and_read_as_empty_meanwhile(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    stuck = _run(tmp_path, "stuck", 1.0, "running", age=60)
    run_index.update(tmp_path)
    con = sqlite3.connect(run_index.index_path(tmp_path))
    con.execute("DROP INDEX runs_population")
    for column in ("member", "updated", "phase", "stopped"):  # the runs table as schema 3 made it
        con.execute(f"ALTER TABLE runs DROP COLUMN {column}")
    con.execute("UPDATE meta SET value = '3' WHERE key = 'schema'")
    con.commit()
    con.close()
    now = _updated(stuck) + processes.STALL_S + 1
    stalled = Narrow(states=["stalled"], now=now)
    assert index_pages.page(tmp_path, narrow=stalled).total == 0  # a reader before the rebuild: no runs, no error
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="jaxdash"):
        assert run_index.update(tmp_path).read == 1
    lines = [r.getMessage() for r in caplog.records if "run index" in r.getMessage()]
    assert len(lines) == 1 and "of schema 3, this version reads schema 4" in lines[0], lines
    assert _names(index_pages.page(tmp_path, narrow=stalled).runs) == ["stuck"]


def _population_root(root: Path) -> list[str]:
    """Runs and two populations whose members were created apart; the names in the default order expected."""
    for name, created in (("solo1", 10.0), ("solo2", 6.0), ("solo3", 3.0)):
        _run(root, name, created)
    for i, created in enumerate((2.0, 8.0, 5.0)):  # P's newest member (8) puts P after solo1 (10)
        _run(root, f"P{i}", created, group="pop-P", member=i)
    for i, created in enumerate((7.0, 1.0)):
        _run(root, f"Q{i}", created, group="pop-Q", member=i)
    return ["solo1", "P0", "P1", "P2", "Q0", "Q1", "solo2", "solo3"]


def test_a_populations_members_sit_together_in_the_default_order_on_every_page(tmp_path: Path) -> None:
    expected = _population_root(tmp_path)
    run_index.update(tmp_path)
    first = index_pages.members_together("-created")
    pages = [index_pages.page(tmp_path, order="-created", first=first, limit=3, offset=o) for o in (0, 3, 6)]
    assert [n for p in pages for n in _names(p.runs)] == expected and {p.total for p in pages} == {8}
    oldest = index_pages.page(tmp_path, order="+created", first=index_pages.members_together("+created"))
    assert _names(oldest.runs) == ["Q0", "Q1", "P0", "P1", "P2", "solo3", "solo2", "solo1"]
    assert index_pages.members_together("-summary.test/acc") == ""  # any other sort is the sort alone
    # In SQL alone: a population's newest member is one step of an index, never a scan of the runs a member.
    cond, params = index_pages._where("", None)
    con = sqlite3.connect(run_index.index_path(tmp_path))
    plan = con.execute(f"EXPLAIN QUERY PLAN SELECT id FROM runs WHERE {cond} ORDER BY {first} LIMIT 3", params)
    details = [row[3] for row in plan]
    con.close()
    assert any("USING INDEX runs_population" in d for d in details), details


def test_the_runs_page_shows_stalled_as_its_filter_picks_it_and_populations_together(runs_root: Path) -> None:
    expected = _population_root(runs_root)
    _run(runs_root, "stuck", 0.5, "running", age=60, phase="training")
    _run(runs_root, "moving", 0.4, "running", phase="training")
    assert run_index.update(runs_root) is not None
    at = app("views/runs.py")
    table = at.dataframe[0].value
    assert list(table["name"]) == [*expected, "stuck", "moving"]
    assert dict(zip(table["name"], table["status"], strict=True))["stuck"] == "stalled"
    states = at.multiselect(key="runs_filter_states")
    assert "stalled" in states.options and "running" in states.options
    states.set_value(["stalled"]).run()
    assert [tuple(r) for r in at.dataframe[0].value[["name", "status"]].to_numpy()] == [("stuck", "stalled")]
    at.multiselect(key="runs_filter_states").set_value(["running"]).run()
    assert [tuple(r) for r in at.dataframe[0].value[["name", "status"]].to_numpy()] == [("moving", "running")]
