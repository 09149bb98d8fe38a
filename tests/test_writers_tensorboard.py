"""TensorBoard writer, read back with TensorBoard's own event reader and its server's HTTP API; the renderers."""

from __future__ import annotations

import numpy as np
import pytest
from tensorboard.backend.event_processing import event_accumulator as ea
from tensorboard.backend.event_processing import plugin_event_multiplexer as pem
from tensorboard.plugins.hparams import metadata as hp_metadata

from runstore import run_folder
from runwriters import labels, render
from runwriters.base import Progress
from runwriters.tensorboard import TensorBoardWriter, flatten_hparams, readable_name
from training.tasks.summaries import ClassificationSummary, FitSummary, write_summaries

CONFIG = {
    "task": "mnist",
    "dataset": "fashion_mnist",
    "hidden": [128, 64],
    "lr": 1e-3,
    "batch_size": 32,
    "optimizer": "adam",
    "train_limit": None,
    "epochs": 2,
}
STEPS = list(range(20, 201, 20))
NAMES = [f"c{i}" for i in range(10)]


def _load(logdir) -> ea.EventAccumulator:
    acc = ea.EventAccumulator(str(logdir), size_guidance={ea.SCALARS: 0, ea.IMAGES: 0, ea.TENSORS: 0, ea.HISTOGRAMS: 0})
    acc.Reload()
    return acc


def _report(n: int = 12) -> ClassificationSummary:
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 10, n)
    preds = labels.copy()
    preds[:3] = (preds[:3] + 1) % 10
    probs = np.full((n, 10), 0.02)
    probs[np.arange(n), preds] = 0.82
    images = rng.integers(0, 256, (n, 28, 28)).astype(np.uint8)
    return ClassificationSummary(NAMES, labels, preds, images, labels, preds, probs)


def _fit(i: int) -> FitSummary:
    x = np.linspace(-2, 2, 50)
    return FitSummary(x, 2 * x - 1, x, (i / len(STEPS) * 2) * x - 1, 2 * x - 1)


def _run_sequence(w: TensorBoardWriter, state: str = "finished", close: bool = True) -> None:
    """The calls the engine makes (see training/engine/loop.py): scalars + flush per chunk, snapshots, summary."""
    w.write_hparams(CONFIG)
    for i, step in enumerate(STEPS):
        scalars = {"train/loss": 1 / step, "train/acc": step / 200, "epoch/train_loss": 1 / step}
        scalars |= {"perf/steps_per_sec": 100.0, "sys/rss_mb": 300.0 + step}
        w.write_scalars(step, scalars, Progress(step, 200, 1, 1, step / 100))
        w.flush()
        write_summaries(w, step, [_fit(i)], first=i == 0)
    w.write_scalars(200, {"test/acc": 0.8, "test/loss": 0.4})
    w.write_histograms(200, {"params/Dense_0/kernel": np.random.default_rng(0).normal(size=(784, 8))})
    write_summaries(w, 200, [_report()], first=False)
    w.write_summary({"train/loss": 1 / 200, "test/acc": 0.8, "final/extra": 3.0})
    w.flush()
    if close:
        w.close(state)


def test_scalars_images_histograms_text_pr_curves_and_hparams_read_back(tmp_path):
    w = TensorBoardWriter(tmp_path / run_folder.TENSORBOARD, run_name="my run")
    _run_sequence(w)
    assert w.logdir == tmp_path / run_folder.TENSORBOARD / "my run", "TensorBoard lists the run under its name"
    files = list(w.logdir.iterdir())
    assert len(files) == 1 and files[0].name.startswith("events.out.tfevents"), "one event file, no hparams sub-run"
    acc = _load(w.logdir)
    tags = acc.Tags()
    assert [e.step for e in acc.Scalars("train/loss")] == STEPS
    assert acc.Scalars("train/loss")[-1].value == pytest.approx(1 / 200)
    assert [e.step for e in acc.Scalars("test/acc")] == [200], "final metrics never add points to the logged curves"
    assert not [t for t in tags["scalars"] if t.startswith(("hparam/", "epoch/"))], "nothing written twice"
    curves = {"train/loss", "train/acc", "test/acc", "test/loss", "perf/steps_per_sec"}
    finals = {"final/train/loss", "final/test/acc", "final/extra"}
    assert set(tags["scalars"]) == curves | finals, "the HParams metrics: the curves, the final numbers, the speed"
    assert [e.step for e in acc.Scalars("perf/steps_per_sec")] == STEPS
    assert {t: acc.Scalars(t)[-1].value for t in finals} == pytest.approx(
        {"final/train/loss": 1 / 200, "final/test/acc": 0.8, "final/extra": 3.0}
    )
    assert {e.step for t in finals for e in acc.Scalars(t)} == {200}, "at the last step"
    assert [p.name for p in (tmp_path / run_folder.TENSORBOARD).iterdir()] == ["my run"], "one TensorBoard run per run"

    assert [e.step for e in acc.Images("fit/plot")] == STEPS
    assert {"test/prediction_grid", "test/confusion_matrix"} <= set(tags["images"])
    assert "params/Dense_0/kernel" in tags["histograms"]
    assert "config/text_summary" in tags["tensors"]
    config_text = acc.Tensors("config/text_summary")[0].tensor_proto.string_val[0].decode()
    assert "| hidden | 128,64 |" in config_text and "my run" in config_text
    assert "| batch_size | 32 |" in config_text, "whole-number settings stay whole numbers"
    pr_tags = set(acc.PluginTagToContent("pr_curves"))
    assert pr_tags == {f"test/pr/{n}" for n in NAMES}

    content = acc.PluginTagToContent("hparams")
    assert set(content) == {hp_metadata.SESSION_START_INFO_TAG, hp_metadata.SESSION_END_INFO_TAG}
    start = hp_metadata.parse_session_start_info_plugin_data(content[hp_metadata.SESSION_START_INFO_TAG])
    assert start.hparams["hidden"].string_value == "128,64"
    assert start.hparams["lr"].number_value == pytest.approx(1e-3)
    assert start.hparams["batch_size"].number_value == 32
    assert start.hparams["dataset"].string_value == "fashion_mnist"
    assert "train_limit" not in start.hparams, "None is left out so a column keeps one type"
    end = hp_metadata.parse_session_end_info_plugin_data(content[hp_metadata.SESSION_END_INFO_TAG])
    assert end.status == 1  # STATUS_SUCCESS


def test_failed_run_ends_its_session_as_failure_and_keeps_the_message(tmp_path):
    w = TensorBoardWriter(tmp_path / run_folder.TENSORBOARD)
    _run_sequence(w, close=False)
    w.close("diverged", "Loss became nan at step 7")
    acc = _load(w.logdir)
    end = hp_metadata.parse_session_end_info_plugin_data(
        acc.PluginTagToContent("hparams")[hp_metadata.SESSION_END_INFO_TAG]
    )
    assert end.status == 2  # STATUS_FAILURE
    assert "run/message/text_summary" in acc.Tags()["tensors"]


def test_flush_makes_every_chunk_readable_before_close(tmp_path):
    """Events are written synchronously: after flush() a reader sees them (no background queue)."""
    w = TensorBoardWriter(tmp_path / run_folder.TENSORBOARD)
    w.write_hparams(CONFIG)
    for step in STEPS[:3]:
        w.write_scalars(step, {"train/loss": 1.0 / step})
        w.flush()
        assert [e.step for e in _load(w.logdir).Scalars("train/loss")][-1] == step
    w.close()


def test_hparams_table_has_one_session_per_run(tmp_path):
    """Two runs with different tasks under one logdir: both sessions, no arbitrary experiment summary."""
    a = TensorBoardWriter(tmp_path / "run_a" / run_folder.TENSORBOARD, run_name="a")
    _run_sequence(a)
    b = TensorBoardWriter(tmp_path / "run_b" / run_folder.TENSORBOARD, run_name="sweep #1 (lr=0.003 seed=1)")
    b.write_hparams({"task": "regression", "points": 128, "lr": 0.005})
    b.write_scalars(10, {"train/loss": 1.0})
    b.close()
    mux = pem.EventMultiplexer()
    mux.AddRunsFromDirectory(str(tmp_path))
    mux.Reload()
    runs = mux.PluginRunToTagToContent("hparams")
    assert set(runs) == {"run_a/tb/a", "run_b/tb/lr=0.003,seed=1"}, "one run, one session each"
    for tags in runs.values():
        assert hp_metadata.SESSION_START_INFO_TAG in tags and hp_metadata.EXPERIMENT_TAG not in tags


def test_resume_purges_what_the_interrupted_process_wrote_after_the_checkpoint(tmp_path):
    first = TensorBoardWriter(tmp_path / run_folder.TENSORBOARD, run_name="r")
    first.write_hparams(CONFIG)
    for step in range(10, 101, 10):
        first.write_scalars(step, {"train/loss": 1.0, "regression/weight": 1.0})
        first.flush()  # then killed: never closed
    resumed = TensorBoardWriter(
        tmp_path / run_folder.TENSORBOARD, run_name="r", resume_step=50
    )  # checkpoint at 50; same second
    assert resumed.logdir == first.logdir
    for step in range(60, 121, 10):
        resumed.write_scalars(step, {"train/loss": 2.0, "regression/weight": 2.0})
    resumed.close()
    assert len(list(first.logdir.iterdir())) == 2, "the second file never overwrites the first"
    loss = _load(first.logdir).Scalars("train/loss")
    assert [e.step for e in loss] == list(range(10, 121, 10))
    assert {e.step for e in loss if e.value == 2.0} == set(range(60, 121, 10))
    weight = _load(first.logdir).Scalars("regression/weight")
    assert [(e.step, e.value) for e in weight] == [(s, 1.0 if s <= 50 else 2.0) for s in range(10, 121, 10)]


def test_resuming_a_run_written_before_named_logdirs_keeps_its_folder(tmp_path):
    old = TensorBoardWriter(tmp_path / run_folder.TENSORBOARD, run_name="x")
    old.close()
    for f in old.logdir.iterdir():  # the layout of runs written before tb/<name>
        f.rename(tmp_path / run_folder.TENSORBOARD / f.name)
    assert (
        TensorBoardWriter(tmp_path / run_folder.TENSORBOARD, run_name="x", resume_step=0).logdir
        == tmp_path / run_folder.TENSORBOARD
    )


def test_nan_scalars_are_logged(tmp_path):
    w = TensorBoardWriter(tmp_path / run_folder.TENSORBOARD)
    w.write_scalars(1, {"train/loss": float("nan")})
    w.close("diverged")
    assert np.isnan(_load(w.logdir).Scalars("train/loss")[0].value)


def test_flatten_hparams_and_readable_names():
    flat = flatten_hparams(
        {"hidden": (1, 2), "opt": {"name": "adam", "b1": 0.9}, "x": None, "flag": True, "n": np.int64(3)}
    )
    assert flat == {"hidden": "1,2", "opt.name": "adam", "opt.b1": 0.9, "flag": True, "n": 3}
    assert type(flat["n"]) is int
    assert readable_name("pop #0 (lr=0.001 seed=2)", "run") == "lr=0.001,seed=2"
    assert readable_name("a/b: c", "run") == "a_b_ c"
    assert readable_name("", "mnist") == "mnist"


# -- render ---------------------------------------------------------------------------------------


def test_render_regression_draws_points_true_line_and_fit():
    x = np.linspace(-1, 1, 100)
    img = render.render_regression(x, 2 * x + 1, 0.5, 0.0, 2.0, 1.0)  # fit far from the points
    assert img.shape == (240, 320, 3) and img.dtype == np.uint8

    def count(color):
        return int((img == np.array(color, np.uint8)).all(-1).sum())

    assert count(render.FIT) > 300 and count(render.POINT) > 50 and count(render.GRAY) > 100
    blank = render.render_regression(x, 2 * x + 1, float("nan"), 0.0, 2.0, 1.0)
    assert (blank == np.array(render.FIT, np.uint8)).all(-1).sum() == 0, "a diverged fit draws no line"
    assert render.render_regression(np.array([]), np.array([]), 1, 1, 1, 1).shape == (240, 320, 3)


def test_render_prediction_grid_frames_wrong_predictions_red():
    rep = _report(12)
    grid = render.render_prediction_grid(rep.images, rep.labels, rep.preds, cols=4, scale=2)
    cell = 28 * 2 + 2 * 2 + 2
    assert grid.shape == (3 * cell, 4 * cell, 3)
    assert (grid[1, 1] == render.RED).all()  # image 0 is wrong
    assert (grid[1, 3 * cell + 1] == render.GREEN).all()  # image 3 is right


def _ink(region: np.ndarray, channel: int | None = None) -> int:
    """Pixels of an image region that are not white (or, given a channel, clearly of that channel's hue)."""
    if channel is None:
        return int((region != 255).any(-1).sum())
    rgb = region.astype(int)
    others = np.delete(rgb, channel, axis=-1).max(-1)
    return int((rgb[..., channel] - others > 60).sum())


def test_the_confusion_image_names_every_row_and_column():
    cm = np.diag([100] * 10) + 1
    bare = render.render_confusion(cm, cell=24)
    img = labels.confusion(cm, NAMES, cell=24)
    left, top = img.shape[1] - bare.shape[1] - 4, img.shape[0] - bare.shape[0] - 4
    assert left >= 15 and top >= 25  # room for the names
    assert (img[top : top + bare.shape[0], left : left + bare.shape[1]] == bare).all()  # the matrix is unchanged
    for i in range(10):  # a name left of every row, and one above every column
        assert _ink(img[top + i * 24 + 4 : top + i * 24 + 20, : left - 2]) > 10, f"row {i} has no name"
        assert _ink(img[12 : top - 2, left + i * 24 + 4 : left + i * 24 + 20]) > 10, f"column {i} has no name"


def test_labels_drawn_once_per_process_leave_each_image_its_own():
    """Members and trials share the drawn class names; no image shows another's matrix or predictions."""
    first, second = np.diag([100] * 10) + 1, np.full((10, 10), 7)
    a = labels.confusion(first, NAMES)
    assert not (labels.confusion(second, NAMES) == a).all()
    assert (labels.confusion(first, NAMES) == a).all()
    rep = _report(8)
    grid = labels.prediction_grid(rep.images, rep.labels, rep.preds, NAMES, cols=4)
    flipped = labels.prediction_grid(rep.images, rep.labels, rep.labels, NAMES, cols=4)  # all right now
    assert not (flipped == grid).all()
    assert (labels.prediction_grid(rep.images, rep.labels, rep.preds, NAMES, cols=4) == grid).all()


def test_the_prediction_grid_says_what_each_image_was_predicted_and_what_it_is_when_wrong():
    rep = _report(8)  # images 0-2 are predicted wrong
    bare = render.render_prediction_grid(rep.images, rep.labels, rep.preds, cols=4, scale=2)
    img = labels.prediction_grid(rep.images, rep.labels, rep.preds, NAMES, cols=4, scale=2)
    cell_h, cell_w = bare.shape[0] // 2, bare.shape[1] // 4
    assert img.shape[0] > bare.shape[0] and img.shape[1] == bare.shape[1]
    under = img[cell_h : cell_h + labels.LINE]  # the first row's predicted names
    second = img[cell_h + labels.LINE : cell_h + 2 * labels.LINE]  # the true names of wrong ones
    for c in range(4):
        column = slice(c * cell_w, (c + 1) * cell_w)
        wrong = c < 3
        assert _ink(under[:, column], 0 if wrong else 1) > 5  # red when wrong, green when right
        assert (_ink(second[:, column]) > 5) == wrong


def test_render_confusion_shape_and_diagonal_ink():
    cm = np.diag([100] * 10) + 1
    img = render.render_confusion(cm, cell=24)
    assert img.shape == (241, 241, 3)
    # Cell corners (away from the printed counts): the diagonal is dark, the rest near white.
    assert img[3, 3].sum() < 300 and img[3, 27].sum() > 700


def test_the_engines_system_metrics_stay_out_of_tensorboard_and_a_scripts_own_sys_tags_do_not(tmp_path):
    w = TensorBoardWriter(tmp_path / run_folder.TENSORBOARD, run_name="r")
    w.write_scalars(1, {"sys/rss_mb": 300.0, "sys/cpu_percent": 50.0, "sys/gpu_util": 0.7, "train/loss": 1.0})
    w.close()
    assert set(_load(w.logdir).Tags()["scalars"]) == {"sys/gpu_util", "train/loss"}


def _scalar_events(logdir) -> list[tuple[int, str, float]]:
    """(step, tag, value) of every scalar event of a run's event files, read by TensorBoard's own loader."""
    from pathlib import Path

    from tensorboard.backend.event_processing import event_file_loader

    out = []
    for path in sorted(Path(logdir).glob("events.out.tfevents.*")):
        for event in event_file_loader.LegacyEventFileLoader(str(path)).Load():  # raw, as written
            out += [(event.step, v.tag, v.simple_value) for v in event.summary.value if v.HasField("simple_value")]
    return out


def test_a_block_of_rows_writes_the_events_add_scalar_writes_for_each_row(tmp_path):
    steps = np.arange(5, 25)
    columns = {
        "train/loss": np.linspace(1.0, 0.1, 20),
        "bad name (x)": np.arange(20.0),  # tensorboardX cleans the tag: "bad_name__x_"
        "/lead": np.full(20, np.nan),  # a leading slash dropped; NaN kept, as TensorBoard shows it
        "epoch/train_loss": np.ones(20),  # skipped, as write_scalars skips it
        "sys/rss_mb": np.ones(20),
    }
    block = TensorBoardWriter(str(tmp_path / "block"), run_name="block")
    block.write_scalar_rows(steps, columns)
    block.close()
    rows = TensorBoardWriter(str(tmp_path / "rows"), run_name="rows")
    for i, step in enumerate(steps.tolist()):  # tensorboardX's add_scalar, a row at a time
        rows.write_scalars(step, {tag: column[i] for tag, column in columns.items()})
    rows.close()
    written, expected = _scalar_events(block.logdir), _scalar_events(rows.logdir)
    assert len(expected) == 60 and {tag for _, tag, _ in expected} == {"train/loss", "bad_name__x_", "lead"}
    assert [(s, t) for s, t, _ in written] == [(s, t) for s, t, _ in expected]
    np.testing.assert_array_equal([v for *_, v in written], [v for *_, v in expected])
