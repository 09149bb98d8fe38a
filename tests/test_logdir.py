"""TensorBoard log folders read live (runstore/tb_logdir.py): real event files written by tensorboardX
and by TensorBoard's own writer, read back with TensorBoard's EventFileLoader into mirror run folders."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from tensorboard.compat.proto import event_pb2, summary_pb2
from tensorboard.summary.writer.event_file_writer import EventFileWriter
from tensorboard.util import tensor_util
from tensorboardX import SummaryWriter

from runstore import run_folder, run_store, tb_logdir, tb_reads
from runstore.run_folder import RunFolder


def _steps(mirror: Path, tag: str) -> list[int]:
    return [r["step"] for r in RunFolder(mirror).records()[0] if tag in r]


def _write_scalars(writer: SummaryWriter, steps: range) -> None:
    """tensorboardX's flush() returns before its writer thread wrote the events: flush_secs=0.1 writes them soon."""
    for s in steps:
        writer.add_scalar("loss", 1.0 / (s + 1), s)
    writer.flush()


def _sync_until(root: Path, runs: Path, mirror: Path, tag: str, want: list[int]) -> None:
    for _ in range(100):
        tb_logdir.sync(root, runs)
        if _steps(mirror, tag) == want:
            return
        time.sleep(0.05)
    assert _steps(mirror, tag) == want


def test_reads_only_new_events_after_append(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    logs, runs = tmp_path / "logs", tmp_path / "runs"
    writer = SummaryWriter(str(logs / "exp1"), flush_secs=0.1)
    _write_scalars(writer, range(5))
    mirror = tb_logdir.mirror_root(runs) / "exp1"
    _sync_until(logs, runs, mirror, "loss", [0, 1, 2, 3, 4])
    size = (mirror / run_folder.RECORDS).stat().st_size

    read: list[int] = []
    original = tb_reads.read_new
    # count what each sync reads: only the appended events, never the file again
    monkeypatch.setattr(tb_reads, "read_new", lambda *a: _log(read, original(*a)))
    _write_scalars(writer, range(5, 8))
    writer.close()
    _sync_until(logs, runs, mirror, "loss", list(range(8)))
    assert read == [5, 6, 7]
    assert (mirror / run_folder.RECORDS).stat().st_size > size
    run = run_store.read_run(mirror)
    assert run is not None and run.task == tb_logdir.TASK and run.name == "exp1"
    assert tb_logdir.status(mirror)["state"] == "running"  # the file just grew
    tb_logdir.sync(logs, runs, now=time.time() + tb_logdir.RECENT_S + 1)
    assert tb_logdir.status(mirror)["state"] == "finished"


def _log(read: list[int], result: tuple[list[tuple], BaseException | None]) -> tuple[list[tuple], None]:
    events, error = result
    assert error is None
    read.extend(step for _, step, _ in events)  # (wall time, step, values) of each new event
    return events, error


def _tf2_scalar(writer: EventFileWriter, tag: str, value: float, step: int) -> None:
    """A TF2 / CLU-style scalar: a tensor value with the scalars plugin's metadata, not simple_value."""
    meta = summary_pb2.SummaryMetadata(plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name="scalars"))
    val = summary_pb2.Summary.Value(tag=tag, metadata=meta, tensor=tensor_util.make_tensor_proto(np.float32(value)))
    writer.add_event(event_pb2.Event(step=step, wall_time=time.time(), summary=summary_pb2.Summary(value=[val])))


def test_nested_clu_layout_folds_train_and_eval_into_one_run(tmp_path: Path) -> None:
    logs, runs = tmp_path / "logs", tmp_path / "runs"
    for split, tag in (("train", "loss"), ("eval", "accuracy")):
        writer = EventFileWriter(str(logs / "project" / "workdir" / split))
        for step in range(3):
            _tf2_scalar(writer, tag, 0.5 + step, step * 10)
        writer.close()
    found = tb_logdir.sync(logs, runs)
    assert [p.name for p in found] == ["project__workdir"]
    records = RunFolder(found[0]).records()[0]
    assert [r["step"] for r in records if "train/loss" in r] == [0, 10, 20]
    assert [r["eval/accuracy"] for r in records if "eval/accuracy" in r] == [0.5, 1.5, 2.5]
    assert run_store.read_run(found[0]).name == "project/workdir"


def test_our_own_run_folders_are_not_listed_again(tmp_path: Path) -> None:
    """A logdir that holds our runs (each with config.json, status.json and tb/) lists only foreign runs."""
    logs, runs = tmp_path / "logs", tmp_path / "runs"
    ours = run_store.new_run_dir(logs, "sine", "ours")
    RunFolder(ours).write_config("sine", {})
    RunFolder(ours).write_status(state="finished")
    _write_scalars(SummaryWriter(str(ours / run_folder.TENSORBOARD), flush_secs=0.1), range(3))
    foreign = SummaryWriter(str(logs / "foreign"))
    _write_scalars(foreign, range(3))
    foreign.close()
    assert list(tb_logdir.find_runs(logs)) == ["foreign"]
    assert [p.name for p in tb_logdir.sync(logs, runs)] == ["foreign"]


def test_mirror_folder_is_hidden_from_the_runs_root_listing(tmp_path: Path) -> None:
    """The logdir may be the runs root itself: the mirrors (.logdir/) are never read as its runs."""
    runs = tmp_path / "runs"
    writer = SummaryWriter(str(runs / "tbx"))
    _write_scalars(writer, range(2))
    writer.close()
    tb_logdir.sync(runs, runs)
    assert tb_logdir.find_runs(runs).keys() == {"tbx"}
    assert [d.name for d in run_store.run_folders(runs)] == ["tbx"]
    assert (tb_logdir.mirror_root(runs) / "tbx" / run_folder.CONFIG).exists()


def test_jaxdash_logdir_flag_sets_the_env_and_names_a_bad_folder(tmp_path: Path) -> None:
    from jaxdash import cli

    _, env = cli.command(["--logdir", str(tmp_path), "--runs", str(tmp_path / "runs")])
    assert env["JAXDASH_LOGDIR"] == str(tmp_path.resolve())
    with pytest.raises(SystemExit, match="--logdir .*nope: not a folder"):
        cli.command(["--logdir", str(tmp_path / "nope")])


def test_a_file_over_one_read_budget_is_read_on_over_the_next_syncs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each sync reads at most READ_BUDGET bytes of a file; the rest comes with the next syncs, though the file no
    longer changes."""
    from runstore import event_files

    logs, runs = tmp_path / "logs", tmp_path / "runs"
    writer = SummaryWriter(str(logs / "big"))
    for s in range(50):
        writer.add_scalar("loss", 1.0 / (s + 1), s)
    writer.close()
    monkeypatch.setattr(event_files, "READ_BUDGET", 400)  # ~10 scalar events
    mirror = tb_logdir.mirror_root(runs) / "big"
    tb_logdir.sync(logs, runs)
    assert 0 < len(_steps(mirror, "loss")) < 50
    for _ in range(20):
        tb_logdir.sync(logs, runs)
    assert _steps(mirror, "loss") == list(range(50))


def test_python_m_jaxdash_is_the_readme_jaxdash_command(tmp_path: Path) -> None:
    """`python -m jaxdash --logdir DIR` works as the README's `jaxdash --logdir DIR`, without a RuntimeWarning."""
    checkout = Path(__file__).resolve().parent.parent
    env = {**os.environ, "PYTHONPATH": str(checkout), "JAXDASH_LOGDIR": ""}
    cmd = [sys.executable, "-W", "error::RuntimeWarning", "-m", "jaxdash"]
    run = subprocess.run([*cmd, "--help"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert "--logdir" in run.stdout and "usage: jaxdash" in run.stdout
    args = ["--logdir", str(tmp_path), "--runs", str(tmp_path / "runs"), "--print-command"]
    run = subprocess.run([*cmd, *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0 and "streamlit" in run.stdout and "server_app.py" in run.stdout, run.stderr
