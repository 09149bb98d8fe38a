"""The run index holds every run the Runs page lists: the root's run folders, the runs mirrored from a
TensorBoard logdir (real event files written by tensorboardX, mirrored by runstore/tb_logdir.py) and the runs
the page launched that have not written config.json yet (from their launch.json and their process)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from tensorboardX import SummaryWriter

from dashboard.reading import run_list
from runstore import index_reader, index_rows, launch_files, run_folder, run_index, run_store, tb_logdir
from runstore.run_folder import RunFolder
from settings.queue.store import Queue


def _logdir_run(logs: Path, runs: Path, name: str, lr: float, losses: list[float]) -> Path:
    """A logdir run with hparams and scalars, mirrored into the runs root (synced until its last step is there)."""
    writer = SummaryWriter(str(logs / name), flush_secs=0.1)
    for step, loss in enumerate(losses):
        writer.add_scalar("loss", loss, step)
    writer.add_hparams({"lr": lr}, {"hparam/loss": losses[-1]})  # a timestamped side run: folded into this one
    writer.close()
    mirror = tb_logdir.mirror_root(runs) / tb_logdir.mirror_id(name)
    for _ in range(200):  # the writer's thread may still be writing: wait for the event, not a fixed time
        tb_logdir.sync(logs, runs)
        if any(r.get("step") == len(losses) - 1 for r in RunFolder(mirror).records()[0]):
            return mirror
        time.sleep(0.05)
    raise AssertionError(f"{name}: the mirror never held its last step")


def _launch(runs: Path, name: str, **info: object) -> Path:
    d = run_store.new_run_dir(runs, "mnist", name)
    launch_files.write_launch(d, {"launched": time.time(), "name": name, "task": "mnist", **info})
    return d


def test_index_holds_logdir_mirrors_and_page_launches_as_the_runs_page_lists_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    logs, runs = tmp_path / "logs", tmp_path / "runs"
    runs.mkdir()
    monkeypatch.setenv("JAXDASH_RUNS", str(runs))
    monkeypatch.setenv("JAXDASH_LOGDIR", str(logs))
    own = run_store.new_run_dir(runs, "mnist", "own")
    RunFolder(own).write_config("mnist", {"lr": 0.1}, name="own", task_spec="mnist")
    RunFolder(own).write_status(state="finished")
    _logdir_run(logs, runs, "tb_a", 0.01, [3.0, 1.0, 2.0])
    _logdir_run(logs, runs, "own", 0.5, [9.0])  # a logdir run with the id of a root run: both are listed
    proc = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        _launch(runs, "waiting", pid=proc.pid)
        dead = _launch(runs, "dead", pid=2**22 + 4321)
        _launch(runs, "queued", queue_job=Queue(runs).submit(["--help"], label="queued"))  # waits: nothing runs jobs
        run_index.update(runs)
        listed = sorted((r.run_id, str(r.path), r.status.get("state")) for r in run_list.all_runs())
        indexed = sorted((r.run_id, r.path, r.state) for r in index_reader.search(runs))
        assert indexed == listed and len(listed) == 6  # the same runs, in the same states
        kinds = {r.name: (r.kind, r.state, r.task) for r in index_reader.search(runs)}
        assert kinds["tb_a"][0::2] == ("tensorboard", tb_logdir.TASK) and kinds["tb_a"][1] in ("running", "finished")
        assert kinds["waiting"] == ("launched", "starting", "mnist")
        assert kinds["dead"] == ("launched", "failed", "mnist") and kinds["queued"][1] == "queued"
        (tb_a,) = index_reader.search(runs, 'kind = "tensorboard" and config.lr < 0.1')
        assert tb_a.summary["loss"] == [2.0, 1.0, 3.0]  # last, min, max of the mirrored scalars
        assert {r.name for r in index_reader.search(runs, 'kind = "launched" and state = "starting"')} == {"waiting"}
        proc.stdin.close()
        proc.wait()
        run_index.update(runs)  # a starting launch is re-checked each update: its process is gone now
        assert {r.name for r in index_reader.search(runs, 'state = "starting"')} == set()
        RunFolder(dead).write_config("mnist", {"lr": 0.3}, name="dead", task_spec="mnist")  # its process began
        RunFolder(dead).write_status(state="running", pid=2**22 + 4321)
        run_index.update(runs)
        (began,) = index_reader.search(runs, "config.lr = 0.3")
        assert (began.name, began.kind) == ("dead", "engine")
    finally:
        proc.kill()
        proc.wait()


def test_a_launch_the_page_hides_or_cannot_read_is_indexed_as_the_page_lists_it(tmp_path: Path) -> None:
    folded = run_store.new_run_dir(tmp_path, "mnist", "pop")
    launch_files.write_launch(folded, {"launched": 1.0, "population": {"lr": [0.1]}, "group": "pop-1"})
    broken = run_store.new_run_dir(tmp_path, "mnist", "broken")
    (broken / run_folder.LAUNCH).write_text("{not json")
    run_index.update(tmp_path)
    (only,) = index_reader.search(tmp_path)  # the population's launch stands for its members: not a run itself
    assert (only.run_id, only.kind, only.state) == (broken.name, "damaged", "damaged")
    assert run_folder.LAUNCH in only.message


def test_the_mirror_folder_name_is_the_logdir_readers() -> None:
    assert index_rows.LOGDIR_MIRRORS == tb_logdir.MIRROR
