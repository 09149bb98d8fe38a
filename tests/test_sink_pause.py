"""The writer process (jaxdash/sink_process.py) writes an offline W&B copy while the script pauses, TensorBoard at once.

A loop logging thousands of rows a second would pay wandb-core's ~60 us a row even at idle priority; the copy's
calls wait in a spool while calls keep coming and are replayed, in order, when the script sends nothing for
PAUSE_S, and at the end. Real TensorBoard and real wandb (offline) throughout.
"""

from __future__ import annotations

import io
import json
import os
import pickle
import threading
import time
from pathlib import Path

import numpy as np
import psutil
from tensorboard.backend.event_processing import event_accumulator as ea

from jaxdash import sink, sink_process
from runstore.run_folder import RunFolder
from runwriters.base import Tracking
from tests import client_scripts

ROWS = 100


def _opening(run_dir: Path) -> dict:
    RunFolder(run_dir).write_status(state="running")
    tracking = Tracking("offline", True, console=False, run_store=False)  # as jaxdash.session's writer process
    return {"run_dir": str(run_dir), "cfg": {}, "name": None, "tracking": tracking, "resume_step": None}


def _rows(first: int) -> list[tuple[str, tuple]]:
    steps = np.arange(first, first + ROWS)
    return [("write_scalar_rows", (steps, {"loss": 1.0 / (steps + 1.0)}, None)), ("flush", ())]


def _tensorboard_steps(info: io.StringIO) -> list[int]:
    logdir = json.loads(info.getvalue().splitlines()[0])["tensorboard"]["logdir"]  # the writers' info line
    acc = ea.EventAccumulator(logdir, size_guidance={ea.SCALARS: 0})
    acc.Reload()
    return [e.step for e in acc.Scalars("loss")]


def test_the_copy_waits_in_the_spool_while_rows_come_and_catches_up_in_order(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(sink_process, "SLICE_S", 0.0)  # a slice is one message's calls
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    info = io.StringIO()
    writers, spool = sink_process.Writers(_opening(run_dir), info), sink_process.Spool()
    (copy,) = writers.later.writers[1:]
    assert copy.wait_ready(60) and writers.now.writers[1:], "an offline W&B copy and TensorBoard"
    for first in range(0, 3 * ROWS, ROWS):
        writers.route(_rows(first), spool)
    assert spool.pending == 6 and copy.run.step == 0  # nothing reached W&B yet
    assert _tensorboard_steps(info) == list(range(3 * ROWS))  # TensorBoard has every row at once

    reader, writer = os.pipe()
    inbox = sink_process.Inbox(os.fdopen(reader, "rb"))
    with os.fdopen(writer, "wb") as pipe:
        pickle.dump(_rows(3 * ROWS), pipe)  # a message waits: the pause's catch-up gives way after one slice
        pipe.flush()
        deadline = time.monotonic() + 10
        while not inbox.waiting() and time.monotonic() < deadline:
            time.sleep(0.01)
        sink_process.catch_up(writers, spool, inbox)
        assert spool.pending == 4  # one of three spooled messages replayed; the new one comes first
        writers.route(inbox.get(1), spool)
    sink_process.catch_up(writers, spool, None)
    assert spool.pending == 0
    writers.route([("close", ("finished", None))], spool)
    sink_process.catch_up(writers, spool, None)
    history = client_scripts.wandb_history(Path(RunFolder(run_dir).status()["wandb"]["dir"]))
    assert [int(h["_step"]) for h in history] == list(range(4 * ROWS))
    assert [h["loss"] for h in history] == [1.0 / (s + 1.0) for s in range(4 * ROWS)]


def _lift_writer_process(script_pid: int) -> bool:
    for child in psutil.Process(script_pid).children(recursive=True):
        if "jaxdash.sink_process" in " ".join(child.cmdline()):
            sink.normal_priority(child.pid)
            return True
    return False


def test_a_pause_before_the_copys_run_exists_keeps_the_spool_and_the_next_pause_logs_every_row(
    tmp_path: Path, monkeypatch
) -> None:
    from runwriters.wandb import run as wandb_run

    started, real_init = threading.Event(), wandb_run.init_run
    monkeypatch.setattr(wandb_run, "init_run", lambda *a: started.wait(60) and real_init(*a))  # W&B's init, held
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    writers, spool = sink_process.Writers(_opening(run_dir), io.StringIO()), sink_process.Spool()
    (copy,) = writers.later.writers[1:]
    for first in range(0, 3 * ROWS, ROWS):
        writers.route(_rows(first), spool)
    reader, writer = os.pipe()
    inbox = sink_process.Inbox(os.fdopen(reader, "rb"))
    sink_process.catch_up(writers, spool, inbox)  # a pause while W&B starts: replayed now, rows would wait in it
    assert spool.pending == 6
    started.set()
    assert copy.wait_ready(60)
    sink_process.catch_up(writers, spool, inbox)  # the next pause: every row logged, none left buffered
    assert spool.pending == 0 and copy.run.step == 3 * ROWS - 1
    os.close(writer)
    writers.route([("close", ("finished", None))], spool)
    sink_process.catch_up(writers, spool, None)
    history = client_scripts.wandb_history(Path(RunFolder(run_dir).status()["wandb"]["dir"]))
    assert [int(h["_step"]) for h in history] == list(range(3 * ROWS))


PAUSING = f"""
import pathlib, time
import jaxdash
run = jaxdash.init(project="pause")
for step in range({ROWS}):
    run.log({{"loss": 1.0 / (step + 1)}})
pathlib.Path("paused").write_text(run.dir)
while not pathlib.Path("go").exists():
    time.sleep(0.05)
for step in range({ROWS}, {2 * ROWS}):
    run.log({{"loss": 1.0 / (step + 1)}})
run.finish()
"""


def test_a_script_that_pauses_finds_its_rows_in_the_wandb_copy_before_it_ends(tmp_path: Path) -> None:
    proc, _root = client_scripts.start(tmp_path, PAUSING)
    try:
        deadline, rows, lifted = time.monotonic() + 120, [], False
        while len(rows) < ROWS - 1 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.5)
            if not lifted and (tmp_path / "paused").exists():
                # The writer process runs at idle priority: on cores other tests keep busy it would get no time at
                # all in the pause. Lifted to normal priority, as the run's end lifts it, it gets the pause's time.
                lifted = _lift_writer_process(proc.pid)
            status = (
                RunFolder(Path((tmp_path / "paused").read_text())).status() if (tmp_path / "paused").exists() else {}
            )
            if status.get("wandb", {}).get("dir"):
                rows = client_scripts.wandb_history(Path(status["wandb"]["dir"]))
        # the pause's catch-up wrote the rows so far (the last one stays open until a later step, as `step=`'s)
        assert [int(h["_step"]) for h in rows] == list(range(ROWS - 1))
        (tmp_path / "go").write_text("")
        out, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 0, err[-2000:]
    history = client_scripts.wandb_history(Path(status["wandb"]["dir"]))
    assert [h["loss"] for h in history] == [1.0 / (s + 1) for s in range(2 * ROWS)]
