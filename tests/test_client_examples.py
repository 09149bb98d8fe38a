"""examples/flax_mnist_loop.py as a user runs it: a real subprocess on the offline Fashion-MNIST, its run
folder written like a launched run's; and, with the Live page open in Chromium, it shows up and draws
its loss without a reload. Skipped where the dataset is not installed (dataset-fashion-mnist)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tensorboard.backend.event_processing import event_accumulator as ea

from benchmarks import browser_probes
from runstore import run_store
from runstore.run_folder import RunFolder

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "flax_mnist_loop.py"
DATA = Path("/usr/share/datasets/fashion-mnist")
pytestmark = pytest.mark.skipif(not DATA.is_dir(), reason="no Fashion-MNIST at /usr/share/datasets/fashion-mnist")
SHOW_BOUND_S = 10.0  # a guard against a stalled page on a busy 2-core machine; the figure is printed

# Points of the Live page's loss chart (-1 while it is not drawn).
LOSS_POINTS = (
    "() => { for (const [c, s, title] of ("
    + browser_probes.CHARTS_JS
    + ")()) if (title === 'Loss' && s && s[0]) return s[0].n; return -1; }"
)


def start_example(root: Path, *args: str) -> subprocess.Popen:
    env = {**os.environ, "JAXDASH_RUNS": str(root), "PYTHONPATH": str(ROOT), "WANDB_MODE": "offline"}
    cmd = [sys.executable, str(EXAMPLE), *args]
    # A session of its own: a kill takes its writer process (jaxdash's sink) and W&B's service with it, so none
    # of them writes into the (shared) runs root after the test.
    return subprocess.Popen(
        cmd, cwd=root.parent, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )


def test_the_flax_loop_example_writes_a_run_like_a_launched_one(tmp_path: Path) -> None:
    root = tmp_path / "runs"
    proc = start_example(root, "--limit", "1600", "--epochs", "2")
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err[-2000:]
    (run_dir,) = run_store.run_folders(root)
    status = RunFolder(run_dir).status()
    assert status["state"] == "finished" and status["step"] == status["total_steps"] == 100
    records = RunFolder(run_dir).records()[0]
    assert [r["step"] for r in records] == list(range(1, 101))  # the test metrics share the epoch's last step
    assert [r["step"] for r in records if "test/acc" in r] == [50, 100]
    acc = ea.EventAccumulator(status["tensorboard"]["logdir"], size_guidance={ea.SCALARS: 0}).Reload()
    assert [e.step for e in acc.Scalars("test/acc")] == [50, 100]
    assert "epoch 2: test accuracy" in out


@pytest.mark.browser
def test_the_flax_loop_example_shows_up_live_on_an_open_page(server: tuple, tab: object) -> None:
    srv, root = server
    proc = None
    try:
        tab.goto(f"{srv.url}/live")  # type: ignore[attr-defined]
        tab.get_by_text("No runs yet").wait_for(timeout=60_000)  # type: ignore[attr-defined]
        proc = start_example(root, "--limit", "32000", "--epochs", "3")
        while not list(root.glob("*/metrics.jsonl")) and proc.poll() is None:
            time.sleep(0.02)
        first_record = time.monotonic()
        tab.wait_for_function(f"({LOSS_POINTS})() >= 1", timeout=SHOW_BOUND_S * 1000, polling=50)  # type: ignore[attr-defined]
        shown = time.monotonic() - first_record
        earlier = tab.evaluate(LOSS_POINTS)  # type: ignore[attr-defined]
        tab.wait_for_function(f"({LOSS_POINTS})() > {earlier}", timeout=SHOW_BOUND_S * 1000, polling=100)  # type: ignore[attr-defined]
        print(f"flax example: first record -> drawn on the open Live page {shown:.2f} s")
        assert shown <= SHOW_BOUND_S
    finally:
        if proc is not None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
