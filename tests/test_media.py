"""The media section (dashboard/panels/media_panels.py) and TensorBoard logdir runs on the real pages, with AppTest.

Runs are written by the real writers (the run store's RunStoreWriter, a training subprocess,
tensorboardX); the pages read them back from the run folders.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import plotly.graph_objects as go
import pytest
from tensorboardX import SummaryWriter

from dashboard.panels.image_steps_panel import widget_key
from runstore import run_folder, run_store, tb_logdir
from runwriters.base import Table
from runwriters.store import RunStoreWriter
from tests.apptest_pages import app, fake_run
from tests.chart_elements import charts, figure, trace_lengths
from training.tasks.summaries import FigureSummary, ImageSummary, write_summaries

ROOT = Path(__file__).resolve().parents[1]


def _media_charts(at, key: str) -> list:  # noqa: ANN001 - an AppTest
    return [c for c in charts(at) if key in c.key]


def test_logged_figure_image_and_table_shown_with_their_step(runs_root: Path) -> None:
    run_dir = fake_run(runs_root, state="running", pid=None)
    writer = RunStoreWriter(run_dir)
    for step, n in ((10, 3), (20, 5)):
        fig = go.Figure(go.Scatter(x=list(range(n)), y=list(range(n))))
        write_summaries(writer, step, [FigureSummary("panel/mine", fig)], first=False)
    write_summaries(writer, 20, [ImageSummary("samples/grid", np.full((8, 8), 200, np.uint8))], first=False)
    writer.write_tables(20, {"eval/worst": Table(["id", "loss"], [[1, 0.5], [2, 0.25]])})
    writer.close()

    for page, key in (("views/live.py", "live_media"), ("views/detail.py", "detail_media")):
        at = app(page, run=run_dir.name)
        shown = _media_charts(at, f"{widget_key(key, run_dir.name)}_fig_panel/mine")  # a run id's digest
        assert len(shown) == 1 and trace_lengths(shown[0]) == [5], page  # the newest step by default
        slider = at.select_slider[0]
        assert slider.options == ["10", "20"] and slider.value == 20
        assert any("step 20" in m.value for m in at.markdown), page  # the table's step
        assert at.dataframe[0].value["loss"].tolist() == [0.5, 0.25]
        images = at.get("image")
        assert len(images) == 1 and "samples/grid" in str(images[0].proto), page
    slider.set_value(10).run()  # the detail page: an older step on demand
    assert trace_lengths(_media_charts(at, "_fig_panel/mine")[0]) == [3]


def test_damaged_figure_file_says_so_and_the_page_stays(runs_root: Path) -> None:
    run_dir = fake_run(runs_root)
    folder = run_dir / run_folder.ARTIFACTS / run_folder.FIGURES / "panel__mine"
    folder.mkdir(parents=True)
    (folder / "0000000005.json").write_text('{"tag": "panel/mine", "step": 5, "figure": ')  # cut off
    at = app("views/detail.py", run=run_dir.name)
    assert any("not a plotly figure" in c.value for c in at.caption)


@pytest.mark.slow  # a real training subprocess: ~20 s here (JAX import and compile)
def test_decision_boundary_task_draws_its_own_panel_on_run_detail(runs_root: Path) -> None:
    spec = "examples/decision_boundary.py:DecisionBoundaryTask"
    cmd = [
        sys.executable,
        "-m",
        "training",
        spec,
        "--steps",
        "200",
        "--log-every",
        "100",
        "--quiet",
        "--wandb",
        "disabled",
    ]
    out = subprocess.run([*cmd, "--runs", str(runs_root)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    run_dir = Path(json.loads(out.stdout.strip().splitlines()[-1])["run_dir"])
    at = app("views/detail.py", run=run_dir.name)
    shown = _media_charts(at, "_fig_model/decision_boundary")
    assert len(shown) == 1
    grid, class0, class1 = figure(shown[0])["data"]
    assert trace_lengths(shown[0])[0] == 40 * 40 and grid["marker"]["colorscale"]  # the probability map
    assert class0["name"] == "class 0" and sum(trace_lengths(shown[0])[1:]) == 400  # every data point
    assert at.select_slider[0].options == ["0", "100", "200"]


def _wait_written(folder: Path, tag: str, points: int, timeout: float = 60) -> None:
    """Until TensorBoard's own reader finds `points` values of `tag` in `folder`'s event files."""
    from tensorboard.backend.event_processing import event_accumulator as ea

    deadline = time.monotonic() + timeout
    while True:
        acc = ea.EventAccumulator(str(folder), size_guidance={ea.SCALARS: 0})
        acc.Reload()
        found = len(acc.Scalars(tag)) if tag in acc.Tags()["scalars"] else 0
        if found >= points:
            return
        assert time.monotonic() < deadline, f"{folder}: {found} of {points} {tag} values written in {timeout:.0f} s"
        time.sleep(0.05)


def test_tensorboard_log_run_listed_and_drawn_live(
    runs_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    logs = tmp_path / "tblogs"
    monkeypatch.setenv("JAXDASH_LOGDIR", str(logs))
    writer = SummaryWriter(str(logs / "mnist_tbx"), flush_secs=0.1)
    for s in range(5):
        writer.add_scalar("train_loss", 1.0 / (s + 1), s)
    writer.flush()
    _wait_written(logs / "mnist_tbx", "train_loss", 5)  # tensorboardX writes on its own thread

    table = app("views/runs.py")
    rows = table.dataframe[0].value
    row = rows[rows["name"] == "mnist_tbx"].iloc[0]
    assert row["task"] == tb_logdir.TASK and row["status"] == "running"
    assert not (rows["status"] == "damaged").any()

    live = app("views/live.py", run="mnist_tbx")
    assert trace_lengths(_media_charts(live, "_scalar_train_loss")[0]) == [5]
    for s in range(5, 9):
        writer.add_scalar("train_loss", 1.0 / (s + 1), s)
    writer.close()
    time.sleep(tb_logdir.SYNC_EVERY_S)  # a page syncs a logdir at most this often: the next rerun's sync is due
    live.run()
    assert trace_lengths(_media_charts(live, "_scalar_train_loss")[0]) == [9]
    assert run_store.read_run(tb_logdir.mirror_root(runs_root) / "mnist_tbx") is not None
