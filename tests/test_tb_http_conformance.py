"""A logdir written by tensorboardX while our mirror reads it, checked against TensorBoard's own HTTP API.

TensorBoard's server (its Rust data server, as `tensorboard --logdir` starts it) and the mirror
(runstore/tb_logdir.py) read the same folder; per run and plugin (scalars, images, histograms, text,
hparams) the tags, steps, counts and values must be the same (tests/tb_http.py reads both).
The real writers (Keras, tf.summary, CLU, torch) are in tests/test_tb_peers.py (`-m peers`).
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
from tensorboard.compat.proto import event_pb2, summary_pb2
from tensorboard.summary.writer.event_file_writer import EventFileWriter
from tensorboardX import SummaryWriter

from runstore import tb_logdir
from tests import tb_http

RNG = np.random.default_rng(7)


def _write_while_mirrored(logs: Path, runs: Path) -> None:
    """Two runs, one nested (`a/b`, with a `train` split folded into it), written step by step with a mirror
    sync after each flush, so the mirror reads every file as it grows."""
    exp = SummaryWriter(str(logs / "exp"), flush_secs=3600)
    nested = SummaryWriter(str(logs / "a" / "b"), flush_secs=3600)
    split = SummaryWriter(str(logs / "a" / "b" / "train"), flush_secs=3600)
    for step in range(6):
        exp.add_scalar("loss", 1.0 / (step + 1), step)
        exp.add_scalar("train/acc", 0.1 * step, step)
        exp.add_scalars("lr", {"adam": 1e-3 * (step + 1), "sgd": 0.1}, step)  # sub-runs exp/lr/adam, exp/lr/sgd
        if step % 2 == 0:
            exp.add_image("samples/digit", RNG.random((3, 8, 8)), step)
            exp.add_histogram("weights/w", RNG.normal(step, 1.0, 300), step)
            exp.add_text("notes", f"step {step} done", step)
            exp.add_image("Samples/digit", RNG.random((3, 4, 4)), step)  # a tag apart from samples/digit, by case
            exp.add_image("样本", RNG.random((3, 4, 4)), step)  # a tag with no ASCII letter
            exp.add_text("说明", f"第 {step} 步", step)
        nested.add_scalar("loss", 2.0 - 0.1 * step, step)
        nested.add_histogram("grads", RNG.normal(0.0, 0.1 + step, 100), step)
        split.add_scalar("loss", 3.0 - 0.2 * step, step)
        for writer in (exp, nested, split):
            writer.flush()
        tb_logdir.sync(logs, runs)
    exp.add_images("samples/batch", RNG.random((4, 3, 8, 8)), 5)
    exp.add_scalar("loss", float("nan"), 6)  # a diverged step: TensorBoard charts it as NaN
    exp.add_hparams({"lr": 0.01, "opt": "adam", "layers": 3, "bn": True}, {"hp/acc": 0.9}, name="hp")
    for writer in (exp, nested, split):
        writer.close()
    tb_logdir.sync(logs, runs)


def test_a_tensorboardx_logdir_mirrored_while_written_matches_tensorboards_http_api(tmp_path: Path) -> None:
    logs, runs = tmp_path / "logs", tmp_path / "runs"
    _write_while_mirrored(logs, runs)
    want = tb_http.matched_view(logs, runs)
    # What was compared: every run and plugin TensorBoard has, so an empty answer cannot pass.
    assert set(want) == {"exp", "exp/lr/adam", "exp/lr/sgd", "exp/hp", "a/b"}, sorted(want)
    assert [s for s, _, _ in want["exp"]["scalars"]["loss"]] == list(range(7))
    for tag in ("samples/digit", "Samples/digit", "样本"):
        assert [(s, len(h)) for s, h in want["exp"]["images"][tag]] == [(0, 1), (2, 1), (4, 1)], tag
    assert len(want["exp"]["histograms"]["weights/w"]) == 3 and len(want["a/b"]["histograms"]["grads"]) == 6
    assert want["exp"]["text"]["notes/text_summary"][-1] == (4, "step 4 done")
    assert want["exp/hp"]["hparams"] == {"lr": 0.01, "opt": "adam", "layers": 3.0, "bn": True}
    assert "train/loss" in want["a/b"]["scalars"] and "loss" in want["a/b"]["scalars"]
    fresh, deadline = tmp_path / "fresh", time.monotonic() + 60  # a server started now reads each file whole
    while time.monotonic() < deadline:  # a sync waits for its reads a few seconds at most: a loaded machine needs more
        tb_logdir.sync(logs, fresh)
        if not tb_http.differences(tb_http.mirror_view(runs), tb_http.mirror_view(fresh)):
            break
    assert not tb_http.differences(tb_http.mirror_view(runs), tb_http.mirror_view(fresh))


def test_a_scalar_tagged_step_never_moves_the_other_values_of_its_event(tmp_path: Path) -> None:
    """A TF1 merged summary holds several values in one event; one tagged "step" (or "wall", "ts": metrics.jsonl's
    own keys) once overwrote the record's step, so `loss` showed at step 10 instead of 3. Such a tag cannot be a
    metrics.jsonl key: it is left out (TensorBoard shows it), the others keep their step."""
    logs, runs = tmp_path / "logs", tmp_path / "runs"
    writer = EventFileWriter(str(logs / "tf1"))
    values = [summary_pb2.Summary.Value(tag=t, simple_value=v) for t, v in (("step", 10.0), ("loss", 0.5), ("ts", 1.0))]
    writer.add_event(event_pb2.Event(wall_time=1.0e9, step=3, summary=summary_pb2.Summary(value=values)))
    writer.close()
    tb_logdir.sync(logs, runs)
    assert tb_http.mirror_view(runs)["tf1"]["scalars"] == {"loss": [(3, 0.5, 1.0e9)]}


def test_a_histogram_of_nothing_keeps_its_step_as_tensorboard_does(tmp_path: Path) -> None:
    """A legacy histogram with no bucket (TF1's histogram of an empty tensor): TensorBoard serves its step with no
    bucket; the mirror once dropped the step."""
    logs, runs = tmp_path / "logs", tmp_path / "runs"
    writer = EventFileWriter(str(logs / "tf1"))
    for step in range(3):
        histo = summary_pb2.HistogramProto(min=0.0, max=2.0, num=3, bucket_limit=[1.0, 2.0], bucket=[1, 2])
        value = summary_pb2.Summary.Value(tag="h", histo=histo if step != 1 else summary_pb2.HistogramProto())
        writer.add_event(event_pb2.Event(wall_time=1.0e9 + step, step=step, summary=summary_pb2.Summary(value=[value])))
    writer.close()
    tb_logdir.sync(logs, runs)
    want = tb_http.matched_view(logs, runs)
    assert [(s, c) for s, c, _ in want["tf1"]["histograms"]["h"]] == [(0, [1.0, 2.0]), (1, []), (2, [1.0, 2.0])]
