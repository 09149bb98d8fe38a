"""Compare puts the selected runs' histograms and images side by side (a run a column), at one step chosen
with one slider, for two real client runs (the `jaxdash` client in subprocesses), in AppTest."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests import client_scripts
from tests.apptest_pages import APP
from tests.chart_elements import charts, figure

SCRIPT = """
import sys
import numpy as np
import jaxdash

scale = float(sys.argv[1])
run = jaxdash.init(project="media", name=f"scale-{sys.argv[1]}", wandb="disabled", tensorboard=False)
for step in range(3):
    run.log({"train/loss": scale / (step + 1), "train/grads": jaxdash.Histogram(np.arange(10.0) * scale * (step + 1)),
             "eval/frame": jaxdash.Image(np.full((8, 8), int(40 * scale * step) % 255, np.uint8))}, step=step)
run.finish()
"""


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    tmp = tmp_path_factory.mktemp("media")
    root = tmp / "runs"
    script = client_scripts.write(tmp, SCRIPT)
    import subprocess
    import sys

    for scale in ("1", "2"):
        out = subprocess.run([sys.executable, str(script), scale], env=client_scripts.script_env(root), cwd=tmp,
                             capture_output=True, text=True, timeout=300)  # fmt: skip
        assert out.returncode == 0, out.stderr
    return sorted(p for p in root.iterdir() if p.is_dir())


def test_histograms_and_images_of_two_runs_side_by_side(two_runs: list[Path], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JAXDASH_RUNS", str(two_runs[0].parent))
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["compare"] = ",".join(p.name for p in two_runs)
    at.run()
    at.switch_page("views/runs.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert "Histograms and images" in [h.value for h in at.subheader]
    bars = [figure(c) for c in charts(at) if any(t.get("type") == "bar" for t in figure(c)["data"])]
    assert len(bars) == 2  # train/grads, one chart per run, at the newest step (2)
    assert {b["layout"]["title"]["text"] for b in bars} == {"train/grads at step 2"}
    captions = [i.caption.replace("\\", "") for el in at.get("image") for i in el.proto.imgs]
    assert captions == ["eval/frame · step 2"] * 2  # eval/frame: each run's image at step 2
    sliders = [s for s in at.select_slider if s.options == ["0", "1", "2"]]
    assert len(sliders) == 2  # one a key (train/grads, eval/frame), not one a run
    for slider in sliders:
        slider.set_value(0)
    at.run()  # each key's slider moves every run's column
    bars = [figure(c) for c in charts(at) if any(t.get("type") == "bar" for t in figure(c)["data"])]
    assert len(bars) == 2 and {b["layout"]["title"]["text"] for b in bars} == {"train/grads at step 0"}
    captions = [i.caption.replace("\\", "") for el in at.get("image") for i in el.proto.imgs]
    assert captions == ["eval/frame · step 0"] * 2
