"""Images, histograms, text and hparams of a mirrored TensorBoard logdir (runstore/tb_media.py), checked against
what TensorBoard's plugins read (its plugin_event_accumulator) from the same folder: tensorboardX's writer and TensorBoard's
plugins' own formats (each plugin's metadata, written by TensorBoard's EventFileWriter; no TF, no torch), read through the bounded reader."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest
from tensorboard.backend.event_processing import plugin_event_accumulator as event_accumulator
from tensorboard.compat.proto import event_pb2, summary_pb2
from tensorboard.plugins.histogram import metadata as histogram_metadata
from tensorboard.plugins.image import metadata as image_metadata
from tensorboard.plugins.text import metadata as text_metadata
from tensorboard.summary.writer.event_file_writer import EventFileWriter
from tensorboard.util import tensor_util
from tensorboardX import SummaryWriter

from benchmarks import browser_probes
from runstore import media_store, run_folder, run_store, tb_logdir

RNG = np.random.default_rng(0)
# The charts of the logdir's run drawn: its two histogram panels (plotly) and its loss (the line chart engine).
MEDIA_CHARTS_DRAWN = f"""(() => {{
  const drawn = {browser_probes.DRAWN_CHARTS_JS};
  const titled = (t) => drawn.some((c) => c.title === t);
  return titled("weights/w at step 3") && titled("weights/w over steps (histograms)")
    && drawn.some((c) => c.series.some((s) => s.name === "loss" && s.n === 3));
}})()"""


def _accumulator(folder: Path) -> event_accumulator.EventAccumulator:
    acc = event_accumulator.EventAccumulator(str(folder), size_guidance={event_accumulator.TENSORS: 0})
    acc.Reload()
    return acc


def _sync_until(logs: Path, runs: Path, done: object) -> None:
    for _ in range(100):
        tb_logdir.sync(logs, runs)
        if done():
            return
        time.sleep(0.05)
    assert done()


def _check_against_tensorboard(folder: Path, mirror: Path, buckets: bool = True) -> None:
    """Image count per step, histogram buckets and text per step equal TensorBoard's own reading (legacy histograms'
    buckets, `buckets=False`: as TensorBoard's server has them, tests/test_tb_http_conformance.py; not this reader's)."""
    acc = _accumulator(folder)
    tags = acc.Tags()["tensors"]
    images, hists, texts = media_store.image_steps(mirror), media_store.histograms(mirror), media_store.texts(mirror)
    kinds = {t: acc.SummaryMetadata(t).plugin_data.plugin_name for t in tags}
    assert {t for t, k in kinds.items() if k == "images"} == set(images)
    assert {t for t, k in kinds.items() if k == "histograms"} == set(hists)
    assert {t for t, k in kinds.items() if k == "text"} == set(texts)
    for tag in images:
        want = [(e.step, len(tensor_util.make_ndarray(e.tensor_proto)) - 2) for e in acc.Tensors(tag)]
        assert [(i.step, len(i.paths)) for i in images[tag]] == want
        png = tensor_util.make_ndarray(acc.Tensors(tag)[-1].tensor_proto)[2]
        assert images[tag][-1].paths[0].read_bytes() == png
    for tag in hists:
        for (step, counts, edges), e in zip(hists[tag], acc.Tensors(tag), strict=True):
            rows = tensor_util.make_ndarray(e.tensor_proto)
            assert step == e.step and (not buckets or counts == rows[:, 2].tolist())
            assert not buckets or edges == rows[:, 0].tolist() + [rows[-1, 1]]
    for tag in texts:
        want = [
            (e.step, tensor_util.make_ndarray(e.tensor_proto).reshape(()).item().decode()) for e in acc.Tensors(tag)
        ]
        assert texts[tag] == want


def test_tensorboardx_images_histograms_text_and_hparams_match_tensorboard(tmp_path: Path) -> None:
    logs, runs = tmp_path / "logs", tmp_path / "runs"
    writer = SummaryWriter(str(logs / "exp"), flush_secs=0.1)
    for step in (0, 5, 10):
        writer.add_image("samples/digit", RNG.random((3, 8, 8)), step)
        writer.add_histogram("weights/w", RNG.normal(step, 1.0, 500), step)
        writer.add_text("notes", f"step {step}: **fine**", step)
    writer.add_images("samples/batch", RNG.random((3, 3, 8, 8)), 10)  # one step, three images
    writer.add_hparams({"lr": 0.01, "opt": "adam", "layers": 3}, {"hp/acc": 0.9}, name="hp")
    writer.close()
    mirror, hp = tb_logdir.mirror_root(runs) / "exp", tb_logdir.mirror_root(runs) / tb_logdir.mirror_id("exp/hp")
    _sync_until(logs, runs, lambda: len(media_store.texts(mirror).get("notes/text_summary", [])) == 3)
    images = media_store.image_steps(mirror)
    assert [len(i.paths) for i in images["samples/batch"]] == [1]  # tensorboardX tiles a batch into one grid
    assert [i.step for i in images["samples/digit"]] == [0, 5, 10]
    assert [h[0] for h in media_store.histograms(mirror)["weights/w"]] == [0, 5, 10]
    _check_against_tensorboard(logs / "exp", mirror, buckets=False)
    config = run_store.read_json(hp / run_folder.CONFIG)
    assert {k: config["config"][k] for k in ("lr", "opt", "layers")} == {"lr": 0.01, "opt": "adam", "layers": 3}
    from dashboard.panels import panels, runs_index

    row = runs_index.frame([run_store.read_run(hp)], panels.key_config, str).iloc[0]
    assert {"lr=0.01", "opt=adam", "layers=3"} <= set(row["config"].split()), row["config"]  # the Runs table

    tb_logdir._MIRRORS.pop(mirror)  # a new server process: the mirror is read again, never doubled
    tb_logdir.sync(logs, runs)
    _sync_until(logs, runs, lambda: len(media_store.texts(mirror).get("notes/text_summary", [])) == 3)
    assert [h[0] for h in media_store.histograms(mirror)["weights/w"]] == [0, 5, 10]


def _summary(tag: str, plugin: object, data: object, dtype: str | None = None) -> summary_pb2.Summary:
    """A summary as TensorBoard's plugin stores it (its summary.pb() needs TensorFlow, not installed here):
    images [width, height, png, ...], histograms [k, 3] (left, right, count), text a string tensor."""
    meta = plugin.create_summary_metadata(display_name=tag, description="")
    tensor = tensor_util.make_tensor_proto(data, dtype=dtype)
    return summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag=tag, metadata=meta, tensor=tensor)])


def _buckets(values: np.ndarray, k: int) -> np.ndarray:
    counts, edges = np.histogram(values, bins=k)
    return np.stack([edges[:-1], edges[1:], counts.astype(np.float64)], axis=1)


def test_tensorboard_plugin_formats_in_a_nested_run(tmp_path: Path) -> None:
    logs, runs = tmp_path / "logs", tmp_path / "runs"
    writer = EventFileWriter(str(logs / run_folder.TENSORBOARD / "nested"))
    for step in range(3):
        pixels = (RNG.random((2, 6, 6, 3)) * 255).astype(np.uint8)
        pngs = [b"6", b"6"] + [media_store.png_bytes(p) for p in pixels]
        for summary in (
            _summary("images/pair", image_metadata, pngs, "string"),
            _summary("dist/x", histogram_metadata, _buckets(RNG.normal(0, step + 1, 200), 12)),
            _summary("log", text_metadata, f"line {step}".encode(), "string"),
        ):
            writer.add_event(event_pb2.Event(wall_time=time.time(), step=step, summary=summary))
    writer.close()
    mirror = tb_logdir.mirror_root(runs) / tb_logdir.mirror_id("tb/nested")
    _sync_until(logs, runs, lambda: len(media_store.texts(mirror).get("log", [])) == 3)
    assert run_store.read_json(mirror / run_folder.CONFIG)["name"] == "tb/nested"
    assert [len(i.paths) for i in media_store.image_steps(mirror)["images/pair"]] == [2, 2, 2]
    assert all(len(c) == 12 for _, c, _ in media_store.histograms(mirror)["dist/x"])
    _check_against_tensorboard(logs / run_folder.TENSORBOARD / "nested", mirror)


def test_run_detail_draws_a_logdirs_images_histograms_and_text(
    tmp_path: Path, runs_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """AppTest of Run detail on a mirrored tensorboardX run: the client run's panels draw its media."""
    from tests.apptest_pages import app

    logs = tmp_path / "logs"
    monkeypatch.setenv("JAXDASH_LOGDIR", str(logs))
    writer = SummaryWriter(str(logs / "tbx"), flush_secs=0.1)
    for step in (1, 2):
        writer.add_scalar("loss", 1.0 / step, step)
        writer.add_image("samples/digit", RNG.random((3, 8, 8)), step)
        writer.add_histogram("weights/w", RNG.normal(step, 1.0, 500), step)
        writer.add_text("notes", f"note at {step}", step)
    writer.close()
    mirror = tb_logdir.mirror_root(runs_root) / "tbx"
    _sync_until(logs, runs_root, lambda: len(media_store.texts(mirror).get("notes/text_summary", [])) == 2)
    at = app("views/detail.py", run="tbx")
    headers = [h.value for h in at.subheader]
    assert "Logged keys" in headers, headers  # a panel per key of every kind (data_panels)
    assert {"weights/w", "notes/text_summary", "samples/digit"} <= {t.value for t in at.text}
    captions = [i.caption.replace("\\", "") for el in at.get("image") for i in el.proto.imgs]
    assert captions == ["samples/digit · step 2"], captions  # the newest step's image; a slider over both steps
    assert [s.options for s in at.select_slider if s.label == "Step"][0][:2] == ["1", "2"]
    shown = [h.proto.body for h in at.get("html")]  # text panels: rendered markdown, newest step first
    assert any("note at 2" in t and t.index("note at 2") < t.index("note at 1") for t in shown), shown
    live = app("views/live.py", run="tbx")  # Live draws a run's images per step too (histograms: Run detail)
    assert [i.caption.replace("\\", "") for el in live.get("image") for i in el.proto.imgs] == captions


@pytest.mark.browser
def test_run_detail_in_chromium_shows_a_logdirs_media(tmp_path: Path, tab: object) -> None:
    """The real page (a server of its own reading $JAXDASH_LOGDIR) in Chromium: image, histograms and text."""
    from dashboard.server.serve import start_server

    runs, logs = tmp_path / "runs", tmp_path / "logs"
    writer = SummaryWriter(str(logs / "tbx"), flush_secs=0.1)
    for step in (1, 2, 3):
        writer.add_scalar("loss", 1.0 / step, step)
        writer.add_image("samples/digit", RNG.random((3, 28, 28)), step)
        writer.add_histogram("weights/w", RNG.normal(step, 1.0, 500), step)
        writer.add_text("notes", f"note at {step}", step)
    writer.close()
    env = {"WANDB_MODE": "disabled", "JAXDASH_WARM_WORKER": "0", "JAXDASH_LOGDIR": str(logs)}
    srv = start_server(runs, tmp_path / "streamlit.log", env=env)
    try:
        tab.goto(f"{srv.url}/detail?run=tbx")
        tab.get_by_text("note at 3").first.wait_for(state="attached", timeout=90_000)  # a dataframe's cell
        tab.get_by_role("heading", name="Logged keys").wait_for(timeout=60_000)  # a panel per key (data_panels)
        tab.get_by_text("samples/digit · step 3").first.wait_for(timeout=60_000)  # the image's caption
        assert tab.locator("[data-testid=stImage] img").count() >= 1
        tab.get_by_text("weights/w", exact=True).first.wait_for(timeout=60_000)  # the histogram's panel
        tab.wait_for_function(MEDIA_CHARTS_DRAWN, timeout=60_000, polling=100)
        out = Path(__file__).resolve().parent.parent / "test-artifacts"
        out.mkdir(exist_ok=True)
        tab.screenshot(path=str(out / "logdir_media_detail.png"))
        tab.get_by_text("weights/w", exact=True).first.scroll_into_view_if_needed()
        tab.screenshot(path=str(out / "logdir_media_detail_histograms.png"))
        body = tab.inner_text("body")
        assert "Traceback" not in body and "step 3 · 1 image" in body, body[:2000]
    finally:
        srv.stop()


def test_a_restarted_writers_media_replace_the_orphaned_steps_as_tensorboard_does(tmp_path: Path) -> None:
    """TensorBoard's default reader (its data server) drops a series' steps at or after a step that went back,
    as tb_logdir.preempted does for scalars (plugin_event_accumulator keeps them without a SessionLog START)."""
    logs, runs = tmp_path / "logs", tmp_path / "runs"
    mirror = tb_logdir.mirror_root(runs) / "exp"
    for steps in (range(6), range(3)):  # a writer, then a restarted one in the same folder from step 0
        writer = SummaryWriter(str(logs / "exp"), flush_secs=0.1)
        for step in steps:
            writer.add_image("img", RNG.random((3, 4, 4)), step)
            writer.add_histogram("w", RNG.normal(0, 1, 50), step)
            writer.add_text("t", f"{len(steps)}:{step}", step)
        writer.close()
        time.sleep(1.1)  # the next writer's file name (its time in seconds) sorts after this one's
        want = f"{len(steps)}:{steps[-1]}"
        _sync_until(logs, runs, lambda w=want: media_store.texts(mirror).get("t/text_summary", [(0, "")])[-1][1] == w)
    assert [i.step for i in media_store.image_steps(mirror)["img"]] == [0, 1, 2]
    assert [h[0] for h in media_store.histograms(mirror)["w"]] == [0, 1, 2]
    assert media_store.texts(mirror)["t/text_summary"] == [(0, "3:0"), (1, "3:1"), (2, "3:2")]
