"""Run detail shows everything a W&B script logs with `import jaxdash as wandb`: saved files and artifacts,
alerts, the summary (strings, define_metric's min/max), the W&B group and job type, the run's events,
histograms over steps, images per step with captions, and define_metric's step_metric and hidden.

The run folder comes from a real subprocess (W&B's calls, unchanged but for the import); the page is
driven with AppTest, and once in Chromium against a real server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from dashboard.panels import safe_text
from runstore import run_folder
from runstore.run_folder import RunFolder
from tests.apptest_pages import app, dirs
from tests.chart_elements import charts, figure, trace_values

REPO = Path(__file__).resolve().parent.parent
ARTIFACTS = REPO / "test-artifacts"
SCRIPT = """
import numpy as np
import jaxdash as wandb

run = wandb.init(project="demo", name="worker-1", group="exp-a", job_type="train", tags=["t1"],
                 notes="first try", config={"lr": 0.1})
wandb.define_metric("epoch")
wandb.define_metric("val/*", step_metric="epoch", summary="min,max")
wandb.define_metric("secret", hidden=True)
rng = np.random.default_rng(0)
for i in range(5):
    wandb.log({"train/loss": 1.0 / (i + 1), "secret": float(i),
               "weights": wandb.Histogram(rng.normal(size=400) * (i + 1)), "weights_array": rng.normal(size=100),
               "samples": [wandb.Image(np.full((8, 8, 3), 40 * i, np.uint8), caption=f"cap {i}"),
                           wandb.Image(np.full((8, 8, 3), 255 - 40 * i, np.uint8), caption=f"second {i} ![x](http://example.invalid/{i}.png)")]})
    wandb.log({"val/loss": 2.0 / (i + 1), "epoch": 10 * i})
wandb.summary["best_model"] = "m-3"
with open("model.txt", "w") as fh:
    fh.write("weights v1")
wandb.save("model.txt")
art = wandb.Artifact("mymodel", type="model", description="the best one")
art.add_file("model.txt")
run.log_artifact(art)
wandb.alert(title="Loss high", text="loss is <b>high</b> ![x](http://example.invalid/x.png)",
            level=wandb.AlertLevel.WARN)
"""


def run_script(root: Path, workdir: Path, source: str = SCRIPT) -> list[Path]:
    """Run `source` as a real script (`import jaxdash as wandb`; W&B's own copy off) into runs root `root`."""
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "script.py").write_text(source)
    env = {**os.environ, "JAXDASH_RUNS": str(root), "WANDB_MODE": "disabled", "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "script.py"], cwd=workdir, env=env, capture_output=True, text=True, timeout=180
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return sorted(dirs(root))


@pytest.fixture(scope="module")
def logged(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The run folder the script above wrote (one for the module: the page only reads it)."""
    base = tmp_path_factory.mktemp("wandb_detail")
    (root := base / "runs").mkdir()
    (run_dir,) = run_script(root, base / "work")
    return run_dir


@pytest.fixture
def detail(logged: Path, monkeypatch: pytest.MonkeyPatch):  # noqa: ANN201 - an AppTest
    monkeypatch.setenv("JAXDASH_RUNS", str(logged.parent))
    return app("views/detail.py", run=logged.name)


def _captions(at) -> list[str]:  # noqa: ANN001
    """The captions of every image on the page, markdown escapes (safe_text.md) dropped."""
    return [i.caption.replace("\\", "").replace(safe_text.JOINER, "") for el in at.get("image") for i in el.proto.imgs]


def _frames(at) -> list:  # noqa: ANN001
    return [d.value for d in at.dataframe]


def _frame_with(at, column: str):  # noqa: ANN001, ANN202
    found = [df for df in _frames(at) if column in df.columns]
    assert found, f"no table with a {column!r} column: {[list(df.columns) for df in _frames(at)]}"
    return found[0]


def test_files_artifacts_alerts_summary_and_wandb_fields_are_listed(detail) -> None:  # noqa: ANN001
    at = detail
    texts = [t.value for t in at.text]
    assert any("W&B group: exp-a" in t and "Job type: train" in t for t in texts), texts
    assert any("1 alert raised" in w.value for w in at.warning)
    alerts = _frame_with(at, "title")
    assert list(alerts["title"]) == ["Loss high"] and list(alerts["level"]) == ["WARN"]
    assert alerts["text"][0] == "loss is <b>high</b> ![x](http://example.invalid/x.png)"  # as written: text
    assert alerts["step"][0] == 10 and alerts["time"].notna().all()
    files = _frame_with(at, "file")
    assert list(files["file"]) == ["model.txt"] and list(files["size"]) == ["10 B"]
    downloads = [d for d in at.get("download_button") if d.proto.label == "Download"]
    assert len(downloads) == 2  # the saved file's and the artifact file's
    arts = _frame_with(at, "artifact")
    row = arts.iloc[0]
    assert (row["artifact"], row["type"], row["version"], row["files"]) == ("mymodel", "model", "v0", 1)
    assert "the best one" in texts
    summary = dict(_frame_with(at, "key").itertuples(index=False))
    assert summary["best_model"] == "m-3" and summary["val/loss"] == "min 0.4 · max 2"
    shown = " ".join(m.value for m in at.markdown) + " ".join(c.value for c in at.caption)
    assert "example.invalid" not in shown, "a run's text reached markdown"


def test_step_metric_is_the_x_axis_and_hidden_metrics_are_not_drawn(detail) -> None:  # noqa: ANN001
    at = detail
    grids = {c.key: figure(c) for c in charts(at) if "detail_all_" in c.key}
    titles = {k: [a["text"] for a in f["layout"].get("annotations", [])] for k, f in grids.items()}
    (val_key,) = [k for k, t in titles.items() if t == ["val/loss"]]
    val = next(c for c in charts(at) if c.key == val_key)
    assert trace_values(val, "x") == [[0.0, 10.0, 20.0, 30.0, 40.0]]  # epochs, not steps 1, 3, 5, ...
    assert figure(val)["layout"]["xaxis"]["title"]["text"] == "epoch"
    assert not any("secret" in t for ts in titles.values() for t in ts), titles
    assert "secret" not in [m.label for m in at.metric]


def _hist_chart(at, tag: str, kind: str):  # noqa: ANN001, ANN202
    """The histogram chart of `tag`: kind "bars" (one step) or "over" (over steps), found by its title."""
    found = [c for c in charts(at) if c.key.endswith(f"_{kind}")]
    return next(c for c in found if figure(c)["layout"]["title"]["text"].startswith(f"{tag} "))


def test_histograms_per_step_with_a_slider_and_over_steps(detail) -> None:  # noqa: ANN001
    at = detail
    assert len([c for c in charts(at) if c.key.endswith("_bars")]) == 2  # wandb.Histogram and a plain array
    bars = _hist_chart(at, "weights", "bars")
    assert figure(bars)["data"][0]["type"] == "bar"
    assert "step 8" in figure(bars)["layout"]["title"]["text"]  # the newest step first
    assert len(figure(_hist_chart(at, "weights", "over"))["data"]) == 5  # one outline a step
    array = _hist_chart(at, "weights_array", "bars")
    assert sum(trace_values(array, "y")[0]) == 100  # every value of the logged array, binned
    slider = [s for s in at.select_slider if s.label == "Step"][1]  # below the images' slider
    assert slider.options == ["0", "2", "4", "6", "8"]
    first_counts = np.asarray(trace_values(bars, "y")[0])
    slider.set_value(0).run()
    bars = _hist_chart(at, "weights", "bars")
    assert "step 0" in figure(bars)["layout"]["title"]["text"]
    counts = np.asarray(trace_values(bars, "y")[0])
    assert counts.sum() == 400 and not np.array_equal(counts, first_counts)
    at.segmented_control[0].set_value("Distribution").run()
    over = _hist_chart(at, "weights", "over")
    assert figure(over)["data"][-1]["name"] == "median" and len(figure(over)["data"]) == 5


def test_images_per_step_with_captions(detail) -> None:  # noqa: ANN001
    at = detail
    assert "samples" in [t.value for t in at.text]
    second = "second {} ![x](http://example.invalid/{}.png)".format  # shown as written, never an image
    assert _captions(at) == ["cap 4", second(4, 4)]  # the newest step, both images
    assert len(at.get("image")) == 2
    images, *histograms = [s for s in at.select_slider if s.label == "Step"]  # media above histograms
    assert len(histograms) == 2
    assert images.options == ["0", "2", "4", "6", "8"]
    images.set_value(2).run()
    assert _captions(at) == ["cap 1", second(1, 1)]


def test_a_write_gap_is_shown_as_a_run_event(logged: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The event is written with runstore's own function (a full disk is not made here)."""
    root = tmp_path / "runs"
    (root / logged.name).mkdir(parents=True)
    for name in (run_folder.CONFIG, run_folder.STATUS, run_folder.RECORDS):
        (root / logged.name / name).write_bytes((logged / name).read_bytes())
    RunFolder(root / logged.name).add_event("write_gap", "metrics.jsonl could not be written for 12 s: ENOSPC")
    monkeypatch.setenv("JAXDASH_RUNS", str(root))
    at = app("views/detail.py", run=logged.name)
    assert any("could not be written 1 time" in w.value for w in at.warning)
    events = _frame_with(at, "kind")
    assert list(events["kind"]) == ["write gap"] and "ENOSPC" in events["message"][0]
    status = json.loads((root / logged.name / run_folder.STATUS).read_text())
    assert status["events"][0]["kind"] == "write_gap"


CHART_TRACES_JS = (
    "Array.from(document.querySelectorAll('.js-plotly-plot'))"
    ".flatMap(g => (g._fullData || []).filter(t => t._length > 0).map(t => t.type + ':' + t.name))"
)


@pytest.mark.browser
def test_run_detail_in_chromium_shows_the_alert_saved_file_and_histogram(served, chromium, tmp_path: Path) -> None:  # noqa: ANN001
    """A real server and Chromium: the alert, the saved file (downloaded) and the histogram are on the page."""
    srv, root = served
    (run_dir,) = run_script(root, tmp_path / "work")
    ARTIFACTS.mkdir(exist_ok=True)
    context = chromium.new_context(viewport={"width": 1400, "height": 1800}, accept_downloads=True)
    page = context.new_page()
    try:
        page.goto(f"{srv.url}/detail?run={run_dir.name}")
        page.get_by_text("1 alert raised by the run").wait_for(timeout=90_000)
        page.wait_for_function(f"{CHART_TRACES_JS}.includes('bar:weights')", timeout=60_000)
        page.get_by_text("Files and artifacts").scroll_into_view_if_needed()
        assert page.get_by_text("W&B group: exp-a").count() == 1
        page.get_by_text("cap 4", exact=True).wait_for(timeout=30_000)  # the newest step's caption
        with page.expect_download(timeout=30_000) as download:
            button = page.locator("[data-testid='stDownloadButton'] button").filter(has_text="Download")
            button.first.dispatch_event("click")  # a click at its place may land on the sticky header
        assert Path(download.value.path()).read_bytes() == b"weights v1"
        assert download.value.suggested_filename == "model.txt"
        page.get_by_text("Loss high").first.wait_for(state="attached", timeout=10_000)  # the alerts table's cell
        page.get_by_text("model.txt", exact=True).first.wait_for(
            state="attached", timeout=10_000
        )  # a files table's cell
        assert not page.locator("img[src*='example.invalid']").count(), "a run's text loaded a remote image"
        page.screenshot(path=str(ARTIFACTS / "run_detail_wandb_files.png"))
        page.locator("#logged-keys").scroll_into_view_if_needed()  # the images with their captions, the histograms
        page.wait_for_function("Array.from(document.images).filter(i => i.naturalWidth > 0).length >= 2")
        page.screenshot(path=str(ARTIFACTS / "run_detail_wandb_media.png"))
    finally:
        context.close()


def test_damaged_files_get_a_line_each_and_the_rest_is_shown(
    logged: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A copy of the run with its summary cut short, an image, a histogram line, an alert line and an
    artifact manifest damaged: each named in one line or skipped, never a traceback, the rest drawn."""
    import shutil

    root = tmp_path / "runs"
    copy = Path(shutil.copytree(logged, root / logged.name, symlinks=True))
    (copy / run_folder.SUMMARY).write_text('{"best_model": "m-')
    (png,) = (copy / run_folder.ARTIFACTS / run_folder.IMAGES / "samples").glob("0000000008_0.png")
    png.write_bytes(b"not an image")
    with open(copy / run_folder.ARTIFACTS / run_folder.HISTOGRAMS / "weights.jsonl", "a") as fh:
        fh.write('{"step": 9, "counts": [1, 2], "edges": [0]}\n{"torn": \n')
    with open(copy / run_folder.ALERTS, "a") as fh:
        fh.write("not json\n")
    (copy / run_folder.ARTIFACTS / run_folder.LOGGED / "mymodel" / "v0" / "manifest.json").write_text("{")
    monkeypatch.setenv("JAXDASH_RUNS", str(root))
    at = app("views/detail.py", run=logged.name)
    assert not at.exception
    warnings = [w.value.replace("\\", "") for w in at.warning]  # markdown escapes (safe_text.md) dropped
    assert any(run_folder.SUMMARY in w and "not shown" in w for w in warnings), warnings
    texts = [t.value for t in at.text]
    assert "0000000008_0.png: not an image (damaged?); not shown" in texts, texts
    assert _captions(at) == ["second 4 ![x](http://example.invalid/4.png)"]  # the other image of that step
    assert "step 8" in figure(_hist_chart(at, "weights", "bars"))["layout"]["title"]["text"]  # bad lines skipped
    assert list(_frame_with(at, "title")["title"]) == ["Loss high"]
    assert list(_frame_with(at, "file")["file"]) == ["model.txt"]  # the saved file; the artifact skipped
    assert not any("artifact" in df.columns for df in _frames(at))


def test_distribution_bands_are_the_data_percentiles_and_offsets_sample_long_runs() -> None:
    """The bands of the distribution view are the logged values' percentiles (within a bin), as TensorBoard's."""
    from components import histogram_figures as hf
    from runstore import media_store

    values = np.random.default_rng(1).normal(size=20_000)
    counts, edges = media_store.bins(values)
    width = edges[1] - edges[0]
    got = hf.percentiles(counts, edges)
    want = np.percentile(values, hf.BASIS_POINTS)
    assert np.all(np.abs(got - want) <= width), (got, want)
    hists = [(s, counts, edges) for s in range(500)]
    fig = hf.offsets(hists, "w")
    steps = [int(t.name.split()[-1].replace(",", "")) for t in fig.data]
    assert len(steps) == hf.OFFSET_STEPS and steps[0] == 0 and steps[-1] == 499  # the first and the newest kept
    bad = (3, [1.0, 2.0], [0.0])  # edges do not fit the counts: left out, never drawn
    assert not hf.valid(bad) and len(hf.distribution([*hists[:3], bad], "w").data) == 5


def test_a_new_image_step_shows_on_the_next_rerun(
    logged: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The page keeps the steps it read until a tag folder changes: a step written since shows, the newest followed."""
    import shutil

    from runstore import media_store

    copy = Path(shutil.copytree(logged, tmp_path / "runs" / logged.name, symlinks=True))
    monkeypatch.setenv("JAXDASH_RUNS", str(copy.parent))
    at = app("views/detail.py", run=logged.name)
    assert _captions(at)[0] == "cap 4"
    png = media_store.png_bytes(np.zeros((4, 4, 3), np.uint8))
    media_store.write_image_step(copy, "samples", 10, [png], ["cap new"])  # as the client writes a step
    at.run()
    images = [s for s in at.select_slider if s.label == "Step"][0]
    assert images.options[-1] == "10" and _captions(at) == ["cap new"]
