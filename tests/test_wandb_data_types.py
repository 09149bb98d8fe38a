"""W&B's data types under `import jaxdash as wandb`, in real subprocess scripts, read back where users look:
the run store (what the page reads), TensorBoard (its own EventAccumulator) and the W&B copy
(`wandb leet inspect --json`). Images per step with captions, lists of images, histograms, matplotlib
figures, tables from DataFrames, `wandb.plot.*`, files media; artifacts, `save` and `alert` in the run folder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from tensorboard.backend.event_processing import event_accumulator as ea

from runstore import media_store, run_files, run_folder, run_store
from runstore.run_folder import RunFolder
from runstore.safe_files import UnsafePath
from tests.test_writers_wandb import finished_records, history, inspect_records

ROOT = Path(__file__).resolve().parents[1]

HEAD = "import jaxdash as wandb\n"  # the one line a W&B script changes

MEDIA = """
import numpy as np, pandas as pd, plotly.graph_objects as go
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
from PIL import Image as PILImage

wandb.init(project="types", config={"lr": 0.1}, wandb="offline")
PILImage.fromarray(np.full((6, 5, 3), 200, np.uint8)).save("pic.png")
for step in range(3):
    fig, ax = plt.subplots()
    ax.plot([0, 1, 2], [step, 1, 0])
    ramp = np.full((8, 8), step / 2.0)
    wandb.log({"loss": 1.0 / (step + 1),
               "samples": [wandb.Image(ramp, caption=f"ramp {step}"), wandb.Image(PILImage.new("RGB", (4, 4)))],
               "photo": wandb.Image("pic.png", caption="from a file"),
               "weights": wandb.Histogram(np.arange(100) + step), "acts": np.arange(100.0) * (step + 1),
               "curve": fig, "rendered": wandb.Image(fig), "gray": wandb.Image(np.ones((4, 4, 3)), mode="L")}, step=step)
    plt.close(fig)
table = wandb.Table(dataframe=pd.DataFrame({"x": [1, 2, 3], "y": [2.0, 4.0, 8.0]}))
table.add_column("z", [0, 1, 0])
assert table.get_column("y") == [2.0, 4.0, 8.0] and table.get_column("z", convert_to="numpy").sum() == 1
truth, probs = np.array([0, 1, 2, 1, 0]), np.eye(3)[[0, 1, 1, 1, 2]] * 0.8 + 0.05
wandb.log({"df": table, "line": wandb.plot.line(table, "x", "y", title="y(x)"),
           "scatter": wandb.plot.scatter(table, "x", "y"), "bars": wandb.plot.bar(table, "x", "y"),
           "spread": wandb.plot.histogram(table, "y"),
           "series": wandb.plot.line_series([1, 2, 3], [[1, 2, 3], [3, 2, 1]], keys=["up", "down"]),
           "cm": wandb.plot.confusion_matrix(y_true=truth, preds=probs.argmax(1), class_names=["a", "b", "c"]),
           "pr": wandb.plot.pr_curve(truth, probs, labels=["a", "b", "c"]),
           "roc": wandb.plot.roc_curve(truth, probs, labels=["a", "b", "c"]),
           "bars_plotly": wandb.Plotly(go.Figure(go.Bar(x=[1], y=[2]))),
           "page": wandb.Html("<b>hello</b>"),
           "tone": wandb.Audio(np.sin(np.linspace(0, 100, 800)), sample_rate=8000),
           "clip": wandb.Video(np.zeros((3, 3, 8, 8), np.uint8)),
           "cloud": wandb.Object3D(np.random.rand(10, 3)),
           "missing": wandb.Image("nope.png"), "empty": wandb.Histogram(np_histogram=([1, 2], [0.0]))}, step=3)
wandb.finish()
"""

FILES = """
import os
os.makedirs("ckpt/sub", exist_ok=True)
open("ckpt/model.bin", "wb").write(b"weights")
open("ckpt/sub/opt.bin", "wb").write(b"state")
open("notes.txt", "w").write("a note")
os.makedirs("outside", exist_ok=True)

run = wandb.init(project="files", wandb="disabled", tensorboard=False)
wandb.save("ckpt/*.bin")
wandb.save("ckpt/sub/*.bin", base_path="ckpt", policy="now")
wandb.save(os.path.abspath("notes.txt"))
try:
    wandb.save("notes.txt", base_path="ckpt")
except ValueError as exc:  # as W&B: a glob above its base_path
    print("REFUSED", exc)
art = wandb.Artifact("model", type="model", metadata={"acc": 0.9})
art.add_dir("ckpt")
art.add_reference("s3://bucket/key")
wandb.log_artifact(art, aliases=["best"])
wandb.log_artifact(art)
wandb.alert(title="accuracy low", text="acc 0.1 < 0.5", level=wandb.AlertLevel.WARN)
wandb.alert(title="accuracy low", text="again", wait_duration=300)
wandb.log({"loss": 1.0})
wandb.finish()

wandb.init(project="files", wandb="disabled", tensorboard=False)
print("DOWNLOADED", wandb.use_artifact("model:best").download(), wandb.use_artifact("model:latest").download())
wandb.finish()
"""


def run_script(tmp_path: Path, code: str) -> tuple[list[Path], str]:
    """Run `code` (after `import jaxdash as wandb`) as a script in `tmp_path`; its run folders (oldest first) and stdout."""
    path = tmp_path / "script.py"
    path.write_text(textwrap.dedent(HEAD) + textwrap.dedent(code))
    root = tmp_path / "runs"
    env = {**os.environ, "JAXDASH_RUNS": str(root), "PYTHONPATH": str(ROOT), "WANDB_SILENT": "true"}
    out = subprocess.run(
        [sys.executable, str(path)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr[-3000:]
    started = lambda p: RunFolder(p).status()["started"]  # noqa: E731 - names made in one second sort at random
    return sorted(run_store.run_folders(root), key=started), out.stdout + out.stderr


@pytest.fixture(scope="module")
def media_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    pytest.importorskip("matplotlib")
    (run_dir,), output = run_script(tmp_path_factory.mktemp("media"), MEDIA)
    return run_dir, output


def test_images_are_kept_every_step_with_captions_in_all_three_places(media_run: tuple[Path, str]) -> None:
    run_dir, _ = media_run
    assert RunFolder(run_dir).status()["state"] == "finished"
    steps = media_store.image_steps(run_dir)
    assert [s.step for s in steps["samples"]] == [0, 1, 2]  # every step, not only the last
    assert [s.captions for s in steps["samples"]] == [(f"ramp {i}", None) for i in range(3)]
    assert [len(s.paths) for s in steps["samples"]] == [2, 2, 2]  # a list of images under one key
    assert steps["photo"][0].captions == ("from a file",)
    from PIL import Image

    assert Image.open(steps["photo"][0].paths[0]).size == (5, 6)
    assert np.asarray(Image.open(steps["samples"][2].paths[0])).max() == 255  # floats in [0, 1] scaled as W&B does
    assert Image.open(steps["rendered"][0].paths[0]).size == (640, 480)  # a matplotlib figure drawn, as W&B does
    assert Image.open(steps["gray"][0].paths[0]).mode == "L"
    assert (
        run_dir / run_folder.ARTIFACTS / run_folder.IMAGES / "samples.png"
    ).is_file()  # the latest, as the page read it before

    acc = ea.EventAccumulator(
        str(next((run_dir / run_folder.TENSORBOARD).iterdir())), size_guidance={"images": 0, "histograms": 0}
    )
    acc.Reload()
    assert [e.step for e in acc.Images("samples/0")] == [0, 1, 2] and [e.step for e in acc.Images("photo")] == [0, 1, 2]
    assert [e.step for e in acc.Histograms("weights")] == [0, 1, 2]

    rows = [
        h for h in history(inspect_records(Path(RunFolder(run_dir).status()["wandb"]["dir"]))) if "samples._type" in h
    ]
    assert [r["samples._type"] for r in rows] == ["images/separated"] * 3
    assert [r["samples.captions"] for r in rows] == [[f"ramp {i}", None] for i in range(3)]
    assert rows[0]["photo._type"] == "image-file" and rows[0]["photo.caption"] == "from a file"
    assert rows[0]["weights._type"] == "histogram" and len(rows[0]["weights.values"]) == 64
    assert rows[1]["acts.values"] == np.histogram(np.arange(100.0) * 2, 32)[0].tolist()


def test_histograms_and_matplotlib_figures_are_stored_per_step(media_run: tuple[Path, str]) -> None:
    run_dir, _ = media_run
    found = media_store.histograms(run_dir)
    lines = found["weights"]
    assert [s for s, _, _ in lines] == [0, 1, 2]
    # an array logged as it is: 32 bins, as W&B's log makes of it
    assert [(s, c) for s, c, _ in found["acts"]] == [
        (i, np.histogram(np.arange(100.0) * (i + 1), 32)[0].tolist()) for i in range(3)
    ]
    step, counts, edges = lines[1]
    assert len(counts) == 64 and len(edges) == 65 and sum(counts) == 100 and edges[0] == 1.0 and edges[-1] == 100.0
    figures = sorted((run_dir / run_folder.ARTIFACTS / run_folder.FIGURES / "curve").glob("*.json"))
    assert [int(p.stem) for p in figures] == [0, 1, 2]  # matplotlib converted to plotly, as W&B does
    fig = json.loads(figures[2].read_text())["figure"]
    assert fig["data"][0]["y"] == [2, 1, 0]


def test_tables_and_wandb_plot_charts_land_as_figures_and_tables(media_run: tuple[Path, str]) -> None:
    run_dir, _ = media_run
    tables = run_dir / run_folder.ARTIFACTS / run_folder.TABLES
    df = json.loads((tables / "df.json").read_text())
    assert df["columns"] == ["x", "y", "z"] and df["rows"] == [[1, 2.0, 0], [2, 4.0, 1], [3, 8.0, 0]]
    cm = json.loads((tables / "cm_table.json").read_text())  # W&B's key for a chart's table
    assert cm["columns"] == ["Actual", "Predicted", "nPredictions"]
    assert {(a, p): n for a, p, n in cm["rows"]}[("c", "b")] == 1
    for key in ("line", "scatter", "bars", "spread", "series", "cm", "pr", "roc", "bars_plotly"):
        (path,) = (run_dir / run_folder.ARTIFACTS / run_folder.FIGURES / key).glob("*.json")
        doc = json.loads(path.read_text())
        assert doc["step"] == 3 and doc["figure"]["data"], key
    assert json.loads(next((run_dir / run_folder.ARTIFACTS / run_folder.FIGURES / "line").glob("*.json")).read_text())["figure"][
        "layout"]["title"]["text"] == "y(x)"  # fmt: skip
    rows = history(inspect_records(Path(RunFolder(run_dir).status()["wandb"]["dir"])))
    last = next(r for r in rows if "cm_table._type" in r)
    assert last["cm_table._type"] == "table-file" and last["cm_table.nrows"] == 9 and last["df.ncols"] == 3


def test_files_media_are_kept_and_nothing_raises(media_run: tuple[Path, str]) -> None:
    run_dir, output = media_run
    media = run_dir / run_folder.ARTIFACTS / run_folder.MEDIA
    assert (media / "page" / "0000000003.html").read_bytes() == b"<b>hello</b>"
    assert (media / "tone" / "0000000003.wav").read_bytes()[:4] == b"RIFF"
    assert (media / "clip" / "0000000003.gif").read_bytes()[:3] == b"GIF"
    assert len(json.loads((media / "cloud" / "0000000003.pts.json").read_text())) == 10
    assert "Image(str)" in output and "nope.png" in output  # the bad image: one notice, the run goes on
    assert "Histogram" in output and "empty" not in media_store.histograms(run_dir)


def test_artifacts_save_and_alerts_are_kept_in_the_run_folder(tmp_path: Path) -> None:
    (first, second), output = run_script(tmp_path, FILES)
    assert RunFolder(first).status()["state"] == "finished"
    # W&B's layout: relative to the working folder, to base_path, and one folder level for an absolute path
    assert run_files.saved_files(first) == ["ckpt/model.bin", "sub/opt.bin", f"{tmp_path.name}/notes.txt"]
    assert "REFUSED" in output
    versions = run_files.artifact_manifests(first)
    assert [(m["name"], m["version"]) for m in versions] == [("model", "v0"), ("model", "v1")]
    assert versions[0]["aliases"] == ["latest", "best"] and sorted(versions[0]["files"]) == ["model.bin", "sub/opt.bin"]
    assert versions[0]["references"][0]["uri"] == "s3://bucket/key" and versions[0]["metadata"] == {"acc": 0.9}
    assert (Path(versions[1]["path"]) / "sub" / "opt.bin").read_bytes() == b"state"
    alerts = run_files.alerts(first)
    assert [(a["title"], a["text"], a["level"]) for a in alerts] == [("accuracy low", "acc 0.1 < 0.5", "WARN")]
    line = next(x for x in output.splitlines() if x.startswith("DOWNLOADED"))
    assert line.split()[1:] == [versions[0]["path"], versions[1]["path"]]  # by alias, from the earlier run


BLOCKED = """
import os
import numpy as np
run = wandb.init(project="blocked", wandb="disabled", tensorboard=False)
open(os.path.join(run.dir, "artifacts", "images"), "w").close()  # a file where the images folder goes
wandb.log({"loss": 0.5, "frame": wandb.Image(np.zeros((4, 4)))}, step=0)
wandb.log({"loss": 0.25}, step=1)
wandb.finish()
"""


def test_a_medium_that_cannot_be_stored_is_dropped_with_a_notice(tmp_path: Path) -> None:
    (run_dir,), output = run_script(tmp_path, BLOCKED)
    assert RunFolder(run_dir).status()["state"] == "finished"
    assert [r["loss"] for r in RunFolder(run_dir).records()[0]] == [0.5, 0.25]
    assert "artifacts/images: not stored: is not a folder" in output


def test_save_and_artifacts_never_write_out_of_the_run_folder(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "files").symlink_to(outside)  # a planted link out of the run folder
    source = tmp_path / "f.txt"
    source.write_text("x")
    with pytest.raises(UnsafePath, match="files: is a symbolic link"):
        run_files.copy_into(run_dir, source, "files/f.txt")
    assert (
        run_files.copy_into(run_dir, source, "../f2.txt") is None
        and run_files.copy_into(run_dir, source, "/etc/x") is None
    )
    assert list(outside.iterdir()) == [] and not (tmp_path / "f2.txt").exists()
    (run_dir / run_folder.ALERTS).symlink_to(source)
    with pytest.raises(UnsafePath, match="alerts.jsonl: is a symbolic link"):
        run_files.append_alert(run_dir, "t", "x", "INFO", None)
    assert source.read_text() == "x" and run_files.alerts(run_dir) == []  # refused, never written through


def test_chart_tables_and_histogram_bins_match_wandbs_own() -> None:
    """Side by side with the W&B SDK in this process: the same table columns and rows, the same bins."""
    import pandas as pd
    import wandb

    from jaxdash import data_types, plot, table

    rng = np.random.default_rng(0)
    truth, guess = rng.integers(0, 3, 50), rng.integers(0, 3, 50)
    ours = plot.confusion_matrix(y_true=truth, preds=guess, class_names=["a", "b", "c"]).table
    theirs = wandb.plot.confusion_matrix(y_true=truth, preds=guess, class_names=["a", "b", "c"]).table
    assert ours.columns == theirs.columns and ours.data == [[a, p, int(n)] for a, p, n in theirs.data]
    args = ([1, 2, 3], [[1, 2, 3], [3, 2, 1]])
    ours, theirs = (
        plot.line_series(*args, keys=["up", "down"]).table,
        wandb.plot.line_series(*args, keys=["up", "down"]).table,
    )
    assert ours.columns == theirs.columns and ours.data == theirs.data
    values = rng.normal(size=1000)
    for kwargs in ({}, {"num_bins": 10}):
        mine, wbs = data_types.Histogram(values, **kwargs), wandb.Histogram(values, **kwargs)
        assert mine.histogram == list(wbs.histogram) and np.allclose(mine.bins, wbs.bins)
    frame = pd.DataFrame({"x": [1, 2], "name": ["p", "q"]})
    mine, wbs = table.Table(dataframe=frame), wandb.Table(dataframe=frame)
    mine.add_column("z", [5, 6])
    wbs.add_column("z", [5, 6])
    assert mine.columns == wbs.columns and mine.get_column("name") == wbs.get_column("name")
    assert mine.get_column("z", convert_to="numpy").tolist() == wbs.get_column("z", convert_to="numpy").tolist()


def test_the_wandb_copy_takes_figures_and_binned_histograms(tmp_path: Path) -> None:
    """The W&B writer (what the client's writer process runs) stores a plotly figure as W&B's plotly-file
    and `Bins` as W&B's histogram of those bins."""
    import plotly.graph_objects as go

    from runwriters.base import Bins, Images, Tracking
    from runwriters.wandb.writer import WandbWriter

    w = WandbWriter(tmp_path, {}, Tracking("offline"))
    assert w.wait_ready(60), w.info
    w.write_scalars(0, {"loss": 1.0})
    w.write_figures(0, {"curve": go.Figure(go.Scatter(x=[0, 1], y=[1, 0])).to_plotly_json()})
    w.write_histograms(0, {"weights": Bins(np.array([1.0, 2.0]), np.array([0.0, 0.5, 1.0]))})
    w.write_images(0, {"one": Images([np.zeros((2, 2), np.uint8)], ["only"], listed=False)})
    w.close()
    (row,) = [h for h in history(finished_records(Path(w.info["dir"]))) if "curve._type" in h]
    assert (
        row["curve._type"] == "plotly-file" and row["weights.values"] == [1, 2] and row["weights.bins"] == [0, 0.5, 1]
    )
    assert row["one._type"] == "image-file" and row["one.caption"] == "only"


DISABLED = """
import numpy as np
open("notes.txt", "w").write("a note")
run = wandb.init(project="off", mode="disabled")
art = wandb.Artifact("model", type="model")
art.add_file("notes.txt")
print("RESULTS", wandb.save("notes.txt"), wandb.log_artifact(art).version, wandb.alert(title="t", text="x"))
wandb.log({"frame": wandb.Image(np.zeros((4, 4))), "h": wandb.Histogram([1, 2, 3])})
open(run.dir + "/scratch.txt", "w").write("a file a script puts in run.dir")
wandb.finish()
print("DIR", run.dir)
"""


def test_a_disabled_run_saves_logs_and_alerts_nothing(tmp_path: Path) -> None:
    """As W&B's mode="disabled": every call accepted, nothing written (its `dir` is a temp folder, not a run,
    removed at finish: a disabled run leaves no folder behind)."""
    runs, output = run_script(tmp_path, DISABLED)
    assert runs == [] and "RESULTS [] None None" in output
    (run_dir,) = [line.split(" ", 1)[1] for line in output.splitlines() if line.startswith("DIR ")]
    assert not Path(run_dir).exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt", "script.py"]


NESTED = """
import numpy as np, plotly.graph_objects as go

wandb.init(project="nested", wandb="offline")
for step in range(2):
    wandb.log({"val": {"loss": 1.0 / (step + 1), "examples": [wandb.Image(np.zeros((4, 4)), caption=f"ex {step}")]},
               "curve": go.Figure(go.Scatter(x=[0, 1], y=[step, 0]))})
wandb.finish()
"""


def test_media_nested_in_a_dict_and_figures_reach_the_store_and_the_wandb_copy(tmp_path: Path) -> None:
    """As wandb.log: a medium at any depth of the dict is kept under its W&B key ("val.examples"), beside the
    nested metric ("val.loss"); a plotly figure reaches the client's W&B copy as W&B's plotly-file."""
    (run_dir,), _ = run_script(tmp_path, NESTED)
    steps = media_store.image_steps(run_dir)
    assert [(s.step, s.captions) for s in steps["val.examples"]] == [(0, ("ex 0",)), (1, ("ex 1",))]
    rows = history(inspect_records(Path(RunFolder(run_dir).status()["wandb"]["dir"])))
    kept = [r for r in rows if "val.loss" in r]
    assert [r["val.loss"] for r in kept] == [1.0, 0.5]
    assert [r.get("val.examples._type") for r in kept] == ["images/separated"] * 2
    assert [r.get("curve._type") for r in kept] == ["plotly-file"] * 2
