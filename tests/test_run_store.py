"""Run directory contract: atomic files, crash detection, incremental reads, safe names; and the store writer."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from runstore import run_folder, run_store
from runstore.run_folder import RunFolder
from runwriters.async_writer import BackgroundWrites
from runwriters.base import Progress, Table
from runwriters.store import RunStoreWriter
from training.tasks.summaries import FitSummary, write_summaries

ROOT = Path(__file__).resolve().parents[1]


def test_atomic_write_json_readers_never_see_a_partial_file(tmp_path):
    path = tmp_path / run_folder.STATUS
    run_store.atomic_write_json(path, {"i": -1, "pad": "x" * 50_000})
    stop, bad = threading.Event(), []

    def reader():
        while not stop.is_set():
            try:
                json.loads(path.read_text())
            except ValueError as exc:  # a torn read would land here
                bad.append(exc)

    t = threading.Thread(target=reader)
    t.start()
    for i in range(100):
        run_store.atomic_write_json(path, {"i": i, "pad": "x" * 50_000})
    stop.set()
    t.join()
    assert not bad
    assert json.loads(path.read_text())["i"] == 99
    assert not list(tmp_path.glob(".*.tmp")), "temp files must be renamed away"


def test_write_status_merges_and_keeps_json_strict(tmp_path):
    RunFolder(tmp_path).write_status(state="running", step=1)
    status = RunFolder(tmp_path).write_status(step=2, loss=float("nan"))
    assert status["state"] == "running" and status["step"] == 2
    on_disk = json.loads((tmp_path / run_folder.STATUS).read_text())  # strict parser: NaN stored as a string
    assert on_disk["loss"] == "nan" and on_disk["step"] == 2


def test_json_files_keep_numpy_scalars_and_non_finite_values_strict(tmp_path):
    doc = {"rows": [[1, 2.5], [np.float32(0.25), np.int64(3)]], "bad": np.float64("inf"), 7: "int key"}
    run_store.atomic_write_json(tmp_path / "a.json", doc, indent=None)
    assert json.loads((tmp_path / "a.json").read_text()) == {
        "rows": [[1, 2.5], [0.25, 3]],
        "bad": "inf",
        "7": "int key",
    }
    run_store.atomic_write_json(tmp_path / "b.json", {"rows": [[1, 2], [3, 4]]})
    assert json.loads((tmp_path / "b.json").read_text()) == {"rows": [[1, 2], [3, 4]]}


def _start_running_process(run_dir: Path) -> subprocess.Popen:
    code = (
        "import sys, time; from pathlib import Path; from runstore.run_folder import RunFolder; "
        "RunFolder(sys.argv[1]).start_status(total_steps=10); print('ready', flush=True); time.sleep(60)"
    )
    proc = subprocess.Popen([sys.executable, "-c", code, str(run_dir)], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready"
    return proc


def test_read_status_reports_a_killed_process_as_crashed(tmp_path):
    proc = _start_running_process(tmp_path)
    try:
        assert RunFolder(tmp_path).status()["state"] == "running"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    status = RunFolder(tmp_path).status()
    assert status["state"] == "crashed"
    assert "killed or crashed" in status["message"]
    # The file itself still says running: "crashed" is the reader's conclusion, not a write.
    assert json.loads((tmp_path / run_folder.STATUS).read_text())["state"] == "running"


def test_read_status_leaves_terminal_states_alone(tmp_path):
    proc = _start_running_process(tmp_path)
    RunFolder(tmp_path).write_status(state="finished", ended=time.time())
    proc.kill()
    proc.wait(10)
    assert RunFolder(tmp_path).status()["state"] == "finished"


def test_read_metrics_is_incremental_and_skips_a_partial_trailing_line(tmp_path):
    RunFolder(tmp_path).append_records([{"step": 1, "train/loss": 1.0}, {"step": 2, "train/loss": 0.5}])
    records, offset = RunFolder(tmp_path).records()
    assert [r["step"] for r in records] == [1, 2]
    with open(tmp_path / run_folder.RECORDS, "a") as f:  # a writer caught mid-line
        f.write('{"step": 3, "train/lo')
    records, offset2 = RunFolder(tmp_path).records(offset)
    assert records == [] and offset2 == offset
    with open(tmp_path / run_folder.RECORDS, "a") as f:
        f.write('ss": 0.25}\n')
    records, offset3 = RunFolder(tmp_path).records(offset2)
    assert records == [{"step": 3, "train/loss": 0.25}]
    assert offset3 == (tmp_path / run_folder.RECORDS).stat().st_size
    assert RunFolder(tmp_path).records(offset3) == ([], offset3)
    assert RunFolder(tmp_path / "missing").records(0) == ([], 0)


@pytest.mark.parametrize(
    "name", ["../escape", "../../etc/passwd", "/abs/path", "..", "a/../../b", "..\\..\\win", " ../ "]
)
def test_run_names_can_never_leave_the_root(tmp_path, name):
    root = tmp_path / "runs"
    path = run_store.new_run_dir(root, "regression", name)
    assert path.parent == root.resolve()
    assert path.is_dir()
    assert "/" not in path.name and ".." not in path.name
    assert list(tmp_path.iterdir()) == [root]


def test_run_ids_are_unique(tmp_path):
    paths = {run_store.new_run_dir(tmp_path, "mnist", "same name") for _ in range(40)}
    assert len(paths) == 40
    assert all(p.name.split("-")[-2] == "name" for p in paths)


def test_delete_refuses_outside_root_and_running_runs(tmp_path):
    root = tmp_path / "runs"
    outside = tmp_path / "precious"
    outside.mkdir()
    (outside / run_folder.CONFIG).write_text("{}")
    with pytest.raises(ValueError):
        run_store.delete_run(outside, root)
    with pytest.raises(ValueError):
        run_store.delete_run(root / ".." / "precious", root)
    with pytest.raises(ValueError):
        run_store.delete_run(root, root)
    assert outside.exists()

    run = run_store.new_run_dir(root, "regression")
    RunFolder(run).start_status(total_steps=1)  # this process is alive, so the run is running
    with pytest.raises(RuntimeError):
        run_store.delete_run(run, root)
    RunFolder(run).write_status(state="finished")
    run_store.delete_run(run, root)
    assert not run.exists()


# -- RunStoreWriter -------------------------------------------------------------------------------


def _progress(step: int) -> Progress:
    return Progress(
        step=step,
        total_steps=100,
        epoch=1,
        total_epochs=2,
        wall_seconds=step / 10,
        compile_seconds=0.5,
        steps_per_sec=123.0,
    )


def test_store_writer_buffers_until_flush_and_owns_only_progress_fields(tmp_path):
    RunFolder(tmp_path).start_status(total_steps=100)
    w = BackgroundWrites(RunStoreWriter(tmp_path))  # as the engine and the client build it
    w.write_scalars(10, {"train/loss": np.float32(0.5), "train/acc": 0.75}, _progress(10))
    assert not (tmp_path / run_folder.RECORDS).exists(), "records reach disk at flush, once per chunk"
    w.flush()
    w.write_scalars(20, {"train/loss": float("nan")}, _progress(20))
    w.write_scalars(20, {"test/acc": 0.5})  # no progress: same step, wall continues the run clock
    w.flush()  # double-buffered: returns once chunk 10 is on disk, chunk 20 is being written
    assert [r["step"] for r in RunFolder(tmp_path).records()[0]][:1] == [10]
    w.drain()
    records, _ = RunFolder(tmp_path).records()
    assert [r["step"] for r in records] == [10, 20, 20]
    assert records[0]["train/loss"] == 0.5 and records[0]["wall"] == 1.0 and "ts" in records[0]
    assert records[1]["train/loss"] == "nan"
    assert records[2]["wall"] >= 2.0
    status = RunFolder(tmp_path).status()
    assert status["state"] == "running" and status["pid"] == os.getpid()
    assert (status["step"], status["total_steps"], status["epoch"], status["total_epochs"]) == (20, 100, 1, 2)
    assert status["steps_per_sec"] == 123.0 and status["compile_seconds"] == 0.5 and status["wall_seconds"] == 2.0
    w.write_summary({"test/acc": 0.5})
    w.close("failed", "boom")
    status = RunFolder(tmp_path).status()
    assert status["state"] == "running" and status["message"] is None, "lifecycle fields belong to training.runs.run"
    assert status["final"] == {"test/acc": 0.5}
    assert not (tmp_path / run_folder.ARTIFACTS / run_folder.FINAL_METRICS).exists(), (
        "final_metrics.json is close_run's, once"
    )


def test_a_block_of_columns_writes_the_lines_records_would_in_order_with_the_records(tmp_path):
    """jaxdash's batches hand the run store whole columns: the same JSON lines as one record
    per step (NaN and inf as strings, any tag name), in order with records written between blocks."""
    cols = {"train/loss": [0.1, float("nan"), 1e-20], 'odd %s "tag"': [1.0, float("inf"), -float("inf")]}
    records = [
        {"step": s, "wall": 0.5, "ts": 7.25, **{k: v[i] for k, v in cols.items()}} for i, s in enumerate([1, 2, 3])
    ]
    assert run_store.column_lines([1, 2, 3], 0.5, 7.25, cols) == run_store.metric_lines(records)
    RunFolder(tmp_path).start_status(total_steps=10)
    w = RunStoreWriter(tmp_path)
    w.write_scalar_rows(np.array([1, 2]), {"train/loss": np.array([0.5, np.nan], np.float32)}, _progress(2))
    w.write_scalars(2, {"test/acc": 0.25})
    w.write_scalar_rows(np.array([3]), {"train/loss": np.array([0.25])})
    w.flush()  # in this thread: on disk when it returns
    read = RunFolder(tmp_path).records()[0]
    assert [(r["step"], r.get("train/loss"), r.get("test/acc")) for r in read] == [
        (1, 0.5, None), (2, "nan", None), (2, None, 0.25), (3, 0.25, None)
    ]  # fmt: skip
    assert read[0]["wall"] == read[1]["wall"] == 0.2 and RunFolder(tmp_path).status()["step"] == 2
    w.close()


def test_store_writer_keeps_the_latest_table_image_and_text_of_each_tag(tmp_path):
    w = RunStoreWriter(tmp_path)
    x = np.linspace(-1, 1, 5)
    for step, weight in ((0, 0.0), (10, 1.5)):
        write_summaries(
            w, step, [FitSummary(x, 2 * x, x[[0, -1]], weight * x[[0, -1]] + 0.1, 2 * x[[0, -1]])], step == 0
        )
    data = json.loads((tmp_path / run_folder.ARTIFACTS / run_folder.TABLES / "fit__data.json").read_text())
    assert data["columns"] == ["x", "y"] and [r[0] for r in data["rows"]] == x.tolist() and data["step"] == 0
    curve = json.loads((tmp_path / run_folder.ARTIFACTS / run_folder.TABLES / "fit__curve.json").read_text())
    assert curve == {
        "tag": "fit/curve",
        "step": 10,
        "columns": ["x", "y", "y_true"],
        "rows": [[-1.0, -1.4, -2.0], [1.0, 1.6, 2.0]],
    }
    assert (tmp_path / run_folder.ARTIFACTS / run_folder.IMAGES / "fit__plot.png").exists()

    w.write_tables(30, {"test/confusion": Table(["true", "a", "b"], [["a", 5, 1], ["b", 0, 4]])})
    doc = json.loads((tmp_path / run_folder.ARTIFACTS / run_folder.TABLES / "test__confusion.json").read_text())
    assert doc["rows"] == [["a", 5, 1], ["b", 0, 4]] and doc["step"] == 30
    w.write_images(30, {"test/grid": np.zeros((4, 6, 3), np.uint8)})
    w.write_images(40, {"test/grid": np.ones((4, 6, 3), np.uint8)})
    assert [p.name for p in (tmp_path / run_folder.ARTIFACTS / run_folder.IMAGES).glob("test__grid*.png")] == [
        "test__grid.png"
    ]
    assert sorted(p.name for p in (tmp_path / run_folder.ARTIFACTS / run_folder.IMAGES / "test__grid").glob("*.png")) == [
        "0000000030_0.png", "0000000040_0.png"]  # and every step's image (#35)  # fmt: skip
    w.write_texts(5, {"notes": "hello"})
    assert json.loads((tmp_path / run_folder.ARTIFACTS / run_folder.TEXTS_LATEST).read_text()) == {
        "notes": {"step": 5, "text": "hello"}
    }
    assert not list(tmp_path.rglob("*.tmp"))


def test_a_job_whose_process_0_died_without_a_word_reads_crashed_naming_the_host_that_died(tmp_path: Path) -> None:
    """An engine job's process 0 aborted by gloo the moment process 1 died (no status written): the reader names
    host 1 from hosts.json, as the job's watchdog would have."""
    import socket
    import subprocess
    import sys

    # two processes that ran and ended: their pids are gone
    pid0, pid1 = (int(subprocess.check_output([sys.executable, "-c", "import os; print(os.getpid())"])) for _ in "01")
    run = tmp_path / "run"
    run.mkdir()
    RunFolder(run).write_status(state="running", pid=pid0, started=1.0)
    here = socket.gethostname()
    RunFolder(run).write_hosts(
        2, [{"process": k, "host": here, "pid": p, "state": "running"} for k, p in ((0, pid0), (1, pid1))]
    )
    status = RunFolder(run).status()
    assert status["state"] == "crashed" and status["lost_host"] == 1, status
    assert (
        status["message"]
        == f"Host 1 (process 1 of 2, pid {pid1} on {here}) died: its process is gone (killed or crashed)."
    )
