"""The client beyond scalars, in real subprocess scripts: wandb's media and summary calls under
`import jaxdash as wandb`, and `run.log_chunk` of metrics a `lax.scan` returned (the in-jit way)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np

from runstore import run_folder, run_store
from runstore.run_folder import RunFolder

ROOT = Path(__file__).resolve().parents[1]

MEDIA = """
import numpy as np, plotly.graph_objects as go
import jaxdash as wandb

wandb.init(project="media", config={"lr": 0.1}, wandb="disabled")
wandb.define_metric("val/loss", summary="min")
for step, loss in enumerate([0.9, 0.2, 0.5]):
    wandb.log({"val/loss": loss, "train/acc": 0.5 + step / 10}, step=step)
ramp = np.linspace(0.0, 1.0, 64).reshape(8, 8)
table = wandb.Table(columns=["class", "count"], data=[["T-shirt/top", 3]])
table.add_data("Bag", 5)
fig = go.Figure(go.Scatter(x=[0, 1], y=[1, 0]))
wandb.log({"samples": wandb.Image(ramp, caption="ramp"), "counts": table, "boundary": fig}, step=3)
wandb.finish()
"""

CHUNKS = """
import jax, jax.numpy as jnp
import jaxdash

def step(w, x):
    loss, grad = jax.value_and_grad(lambda w: jnp.mean((w * x - 2.0 * x) ** 2))(w)
    return w - 0.1 * grad, loss

@jax.jit
def chunk(w, x):  # ten steps in one jitted call; their losses come back as one array
    return jax.lax.scan(lambda w, _: step(w, x), w, None, length=10)

run = jaxdash.init(project="chunks", wandb="disabled", tensorboard=False)
w, x, expected = jnp.zeros(()), jnp.linspace(-1.0, 1.0, 64), []
for _ in range(5):
    w, losses = chunk(w, x)
    run.log_chunk({"train/loss": losses})
    expected += [float(v) for v in losses]
run.finish()
print(expected)
"""


def run_script(tmp_path: Path, code: str) -> tuple[Path, str]:
    path = tmp_path / "script.py"
    path.write_text(textwrap.dedent(code))
    root = tmp_path / "runs"
    env = {
        **os.environ,
        "JAXDASH_RUNS": str(root),
        "PYTHONPATH": str(ROOT),
        "WANDB_MODE": "offline",
    }  # each script passes wandb="disabled"
    out = subprocess.run(
        [sys.executable, str(path)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr[-2000:]
    (run_dir,) = run_store.run_folders(root)
    return run_dir, out.stdout


def test_wandb_media_and_define_metric_land_in_the_run_folder(tmp_path: Path) -> None:
    run_dir, _ = run_script(tmp_path, MEDIA)
    assert RunFolder(run_dir).status()["state"] == "finished"
    final = json.loads((run_dir / run_folder.FINAL_METRICS).read_text())
    assert final["val/loss"] == 0.2  # define_metric(summary="min"): the best, not the last (0.5)
    assert abs(final["train/acc"] - 0.7) < 1e-9  # no definition: the last value, as wandb's summary
    png = (run_dir / run_folder.ARTIFACTS / run_folder.IMAGES / "samples.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    table = json.loads((run_dir / run_folder.ARTIFACTS / run_folder.TABLES / "counts.json").read_text())
    assert table["columns"] == ["class", "count"] and table["rows"] == [["T-shirt/top", 3], ["Bag", 5]]
    (figure,) = (run_dir / run_folder.ARTIFACTS / run_folder.FIGURES / "boundary").glob("*.json")
    doc = json.loads(figure.read_text())
    assert doc["step"] == 3 and doc["figure"]["data"][0]["y"] == [1, 0]


def test_log_chunk_writes_one_record_per_scanned_step(tmp_path: Path) -> None:
    run_dir, stdout = run_script(tmp_path, CHUNKS)
    expected = json.loads(stdout.strip().splitlines()[-1])
    records = RunFolder(run_dir).records()[0]
    assert [r["step"] for r in records] == list(range(50))  # steps from 0, as run.log numbers them
    assert [round(r["train/loss"], 6) for r in records] == [round(v, 6) for v in expected]


PER_STEP = """
import numpy as np
import jaxdash as wandb

wandb.init(project="frames", wandb="disabled", tensorboard=False)
for step in range(4):
    frame = np.full((6, 6), step * 60, np.uint8)
    wandb.log({"loss": 1.0 / (step + 1), "frame": wandb.Image(frame, caption=f"step {step}"),
               "pair": [wandb.Image(frame, caption="left"), wandb.Image(255 - frame, caption="right")]}, step=step)
wandb.finish()
"""


def test_an_image_is_kept_for_every_step_with_its_caption(tmp_path: Path) -> None:
    """Before: only the last step's image of a tag was kept, captions dropped, and a list of images not logged."""
    from PIL import Image

    from runstore import artifacts, media_store

    run_dir, _ = run_script(tmp_path, PER_STEP)
    found = media_store.image_steps(run_dir)
    assert [(s.step, s.captions) for s in found["frame"]] == [(i, (f"step {i}",)) for i in range(4)]
    assert [int(np.asarray(Image.open(s.paths[0])).max()) for s in found["frame"]] == [0, 60, 120, 180]
    assert [s.captions for s in found["pair"]] == [("left", "right")] * 4
    assert [p.name for p in artifacts.images(run_dir)] == ["frame.png", "pair.png"]  # the latest, read as before
