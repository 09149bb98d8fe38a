"""Runs table, compare, Run detail and Live driven with AppTest on run folders written by hand (the run store
is the contract), and the Resume button on real runs."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from dashboard.processes import launch_status, launcher
from runstore import launch_files, run_folder, run_index
from runstore.run_folder import RunFolder
from settings.config import parse_config
from tests.apptest_pages import app, fake_run, wait_status
from tests.chart_elements import charts, trace_lengths, trace_values
from tests.fixtures_runs import hold_children, wait_held

# -- history, compare, detail (run dirs written by hand) ------------------------------------------------


def test_runs_table_lists_runs_with_status_config_and_final_metrics(root: Path) -> None:
    fake_run(root, "regression", "finished")
    fake_run(root, "mnist", "diverged", message="Loss became nan at step 40: training diverged.")
    at = app("views/runs.py")
    df = at.dataframe[0].value
    assert set(df["name"]) == {"fake-regression-finished", "fake-mnist-diverged"}
    assert set(df["status"]) == {"finished", "diverged"}
    mnist = df[df["task"] == "mnist"].iloc[0]
    assert mnist["final test/acc"] == pytest.approx(0.87) and "fashion_mnist" in mnist["config"]


def test_compare_overlays_selected_runs_downsampled(root: Path) -> None:
    a = fake_run(root, "regression", "finished", n=30_000, name="long")
    b = fake_run(root, "regression", "stopped", n=40, name="short")
    # The index read first, as a server's keeper has it once a page opened: the page waits for its update at
    # most a second, and a first read of 30,000 records on a busy machine can take longer.
    run_index.update(root)
    at = app("views/runs.py", selected_ids=[a.name, b.name])
    assert not at.exception
    grids = charts(at)  # a compare grid per prefix: train/ (loss), regression/ (bias, weight)
    assert all("compare_section" in c.key for c in grids) and len(grids) == 2
    lengths = [n for c in grids for n in trace_lengths(c)]
    assert len(lengths) == 2 * 3 and max(lengths) <= 2000 and min(lengths) == 40
    meta = json.loads(grids[0].proto.spec)["layout"]["meta"]["grid"]  # smoothing, log y, x axis: the browser's
    assert meta["controls"] == "compare" and set(meta["t0"]) == {"long", "short"}
    assert at.get("download_button") == []  # the CSV is per run: offered for a single selection


def test_single_selection_offers_csv_and_delete_needs_confirmation(root: Path) -> None:
    d = fake_run(root, "regression", "finished", n=5)
    at = app("views/runs.py", selected_ids=[d.name])
    (download,) = at.get("download_button")
    assert download.proto.label == "Metrics CSV"
    next(b for b in at.button if b.label.startswith("Delete")).click().run()
    assert d.exists() and any("cannot be undone" in w.value for w in at.warning)
    at.button(key="confirm_yes").click().run()
    assert not at.exception and not d.exists()


def test_failed_and_crashed_runs_show_their_message_not_a_traceback(root: Path) -> None:
    d = fake_run(root, "mnist", "failed", message="Dataset 'mnist' is not available. To fix: pass --data-dir DIR.")
    at = app("views/live.py", run=d.name)
    assert [e.value for e in at.error] == ["Dataset 'mnist' is not available. To fix: pass --data-dir DIR."]
    crashed = fake_run(root, "regression", "running", pid=2**22 + 54321)  # no such process
    at = app("views/live.py", run=crashed.name)
    assert any("exited without finishing" in e.value for e in at.error)
    assert not any("Traceback" in m.value for m in at.markdown)


def test_detail_shows_sync_command_confusion_matrix_and_mistakes(root: Path) -> None:
    d = fake_run(root, "mnist", "finished")
    at = app("views/detail.py", run=d.name)
    assert any("` wandb sync " in m.value for m in at.markdown)  # inline code: no syntax highlighter
    keys = [c.proto.id for c in charts(at)]
    assert len(keys) == 5  # loss, accuracy, confusion matrix, misclassified images, all metrics
    assert at.button(key="tb_start").label == "Start TensorBoard"


def test_live_page_reads_metrics_incrementally(root: Path) -> None:
    """A refresh reads only the appended bytes: a record changed in place (same inode, same length) after
    the first read keeps its old value on the chart, while the appended record shows."""
    d = fake_run(root, "regression", "running", n=10, pid=os.getpid())
    at = app("views/live.py", run=d.name)
    assert trace_lengths(charts(at)[1]) == [10]
    path = d / run_folder.RECORDS
    text = path.read_text()
    old = json.dumps(json.loads(text.splitlines()[5])["train/loss"])
    with path.open("r+") as f:  # rewrite step 60's loss in place: a full re-read would see 9.x
        f.seek(text.index(old, text.index('"step": 60')))
        f.write("9" + old[1:])
    RunFolder(d).append_records([{"step": 999, "wall": 9.0, "ts": time.time(), "train/loss": 0.01}])
    at.run()
    assert trace_lengths(charts(at)[1]) == [11]
    assert max(trace_values(charts(at)[1], "y")[0]) <= 1.0


# -- resume ------------------------------------------------------------------------------------------


def test_resume_button_only_for_stopped_or_crashed_runs_with_a_checkpoint(root: Path) -> None:
    stopped = fake_run(root, "regression", "stopped", name="no-ckpt")
    at = app("views/live.py", run=stopped.name)
    assert all(b.key != "resume_run" for b in at.button)
    (stopped / run_folder.CHECKPOINTS / "100").mkdir(parents=True)
    (stopped / run_folder.CHECKPOINTS / "200.orbax-checkpoint-tmp-1").mkdir()
    at = app("views/live.py", run=stopped.name)
    assert at.button(key="resume_run").label == "Resume"
    assert app("views/detail.py", run=stopped.name).button(key="detail_resume").label == "Resume"
    finished = fake_run(root, "regression", "finished")
    (finished / run_folder.CHECKPOINTS / "100").mkdir(parents=True)
    assert all(b.key != "detail_resume" for b in app("views/detail.py", run=finished.name).button)


def test_resume_button_continues_a_stopped_run_in_a_new_process(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hold_children(monkeypatch, tmp_path / "held", chunks=2)  # the run waits after 3 chunks for the stop
    cfg = parse_config("regression", {"steps": 2000, "log_every": 100})
    run_dir = launcher.launch("regression", cfg, name="to-resume", wandb_mode="disabled")
    first_pid = launch_files.launch_info(run_dir)["pid"]
    wait_held(None, tmp_path / "held")
    assert RunFolder(run_dir).status()["state"] == "running"
    launcher.stop(run_dir)
    stopped = wait_status(run_dir, ("stopped", "finished", "failed", "crashed"), timeout=60)
    assert stopped["state"] == "stopped" and launcher.has_checkpoint(run_dir), stopped
    at = app("views/live.py", run=run_dir.name)
    at.button(key="resume_run").click().run()
    assert not at.exception
    resume = launch_files.launch_info(run_dir)["resume"]
    assert resume["pid"] != first_pid and resume["command"][3:5] == ["resume", str(run_dir)]
    assert launch_status.run_status(run_dir)["state"] in ("starting", "running", "finished")  # no longer "stopped"
    deadline = time.monotonic() + 120
    while RunFolder(run_dir).status().get("pid") != resume["pid"] and time.monotonic() < deadline:
        time.sleep(0.2)
    status = wait_status(run_dir, ("finished", "failed", "crashed", "stopped"))
    assert status["state"] == "finished" and status["resumed_from"] > 0 and status["pid"] == resume["pid"], status
    steps = [r["step"] for r in RunFolder(run_dir).records()[0]]
    assert steps == sorted(set(steps)) and steps[-1] == 2000  # continued, nothing logged twice
    at = app("views/live.py", run=run_dir.name)
    assert all(b.key != "resume_run" for b in at.button)
