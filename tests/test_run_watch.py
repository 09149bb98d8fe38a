"""The run-list watcher: new, ended and deleted runs change the signature; unchanged ended runs are not re-read."""

from __future__ import annotations

import os
import shutil
import threading
import time
from collections.abc import Callable

from runstore import run_watch
from runstore.run_folder import RunFolder


def make_run(root, name, state):
    d = root / name
    d.mkdir()
    RunFolder(d).write_config("regression", {"lr": 0.1})
    RunFolder(d).write_status(state=state, pid=os.getpid(), host=os.uname().nodename)
    return d


def test_signature_follows_new_ended_and_deleted_runs(tmp_path, monkeypatch):
    a = make_run(tmp_path, "a", "running")
    assert run_watch.signature(tmp_path) == (("a", True),)
    make_run(tmp_path, "b", "finished")
    assert run_watch.signature(tmp_path) == (("a", True), ("b", False))
    RunFolder(a).write_status(state="finished")
    assert run_watch.signature(tmp_path) == (("a", False), ("b", False))
    reads = []
    real = run_watch._state
    monkeypatch.setattr(run_watch, "_state", lambda d: reads.append(d.name) or real(d))
    assert run_watch.signature(tmp_path) == (("a", False), ("b", False)) and reads == []  # nothing changed: no reads
    RunFolder(a).write_status(state="running", pid=os.getpid())  # resumed in place
    assert run_watch.signature(tmp_path) == (("a", True), ("b", False)) and reads == ["a"]
    shutil.rmtree(tmp_path / "b")
    assert run_watch.signature(tmp_path) == (("a", True),)


def test_stopped_watchers_end_their_threads_and_a_later_call_starts_a_new_one(tmp_path):
    first = run_watch.watcher(tmp_path)
    threads = [t for t in threading.enumerate() if t.name == f"run-watch-{tmp_path.name}"]
    assert len(threads) == 1 and run_watch.watcher(tmp_path) is first  # one per root
    run_watch.stop_all()
    threads[0].join(timeout=5)
    assert not threads[0].is_alive()
    make_run(tmp_path, "a", "running")
    second = run_watch.watcher(tmp_path)
    assert second is not first and second.current == (("a", True),)
    run_watch.stop_all()


def test_a_poke_or_a_logdir_sync_tells_the_listeners_of_a_new_run_without_waiting_for_a_poll(tmp_path, monkeypatch):
    """The push streams' thread listens to the watcher: a new run reaches a page within the watcher's look,
    not a poll and a tick later. With the poll made 60 s long, only the poke (or a logdir sync's, which pokes)
    can tell the listener in time."""
    from tensorboardX import SummaryWriter

    root, logs = tmp_path / "runs", tmp_path / "logs"
    root.mkdir()
    logs.mkdir()
    monkeypatch.setenv("JAXDASH_LOGDIR", str(logs))
    monkeypatch.setattr(run_watch, "POLL_S", 60.0)
    watched = run_watch.watcher(root)
    told = threading.Event()
    watched.on_change(told.set)

    def until_told(seen: Callable[[], bool], what: str) -> None:
        """Until `seen()`, each look made after the listener was told (10 s at most)."""
        deadline = time.monotonic() + 10
        while True:
            told.clear()  # before looking: a change made after the look sets it again
            if seen():
                return
            assert told.wait(max(0.0, deadline - time.monotonic())), f"{what}: {watched.current}"

    try:
        make_run(root, "client", "running")
        watched.poke()  # what the logdir watch does after a sync
        until_told(lambda: ("client", True) in watched.current, "a poke did not tell the listener")
        writer = SummaryWriter(str(logs / "tbx"))  # a new writer: the logdir watch's own poll (0.25 s) finds it
        writer.add_scalar("loss", 1.0, 0)
        writer.flush()
        tbx = lambda: any(name.endswith("/tbx") for name, _ in watched.current)  # noqa: E731
        until_told(tbx, "a logdir sync did not wake the run watcher")
        writer.close()
    finally:
        run_watch.stop_all()
