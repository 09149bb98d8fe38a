"""W&B writer against the real SDK in offline mode, read back with `wandb leet inspect --json`."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from training.writers.base import ClassificationReport, Progress, RegressionSnapshot
from training.writers.wandb_writer import WandbWriter, resolve_mode

WANDB_CLI = str(Path(sys.executable).with_name("wandb"))
CONFIG = {"task": "mnist", "dataset": "fashion_mnist", "hidden": [32], "lr": 0.001, "epochs": 1}
STEPS = [20, 40, 60, 80, 100]


@pytest.fixture(autouse=True)
def wandb_offline_env(tmp_path, monkeypatch):
    """W&B offline with all its state in tmp; any stray network call goes to a closed local port."""
    for sub in ("wandb_dir", "wandb_cache", "wandb_config", "wandb_data", "home"):
        (tmp_path / sub).mkdir()
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_DIR", str(tmp_path / "wandb_dir"))
    monkeypatch.setenv("WANDB_CACHE_DIR", str(tmp_path / "wandb_cache"))
    monkeypatch.setenv("WANDB_CONFIG_DIR", str(tmp_path / "wandb_config"))
    monkeypatch.setenv("WANDB_DATA_DIR", str(tmp_path / "wandb_data"))
    monkeypatch.setenv("WANDB_BASE_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("NETRC", str(tmp_path / "home" / ".netrc"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("WANDB_DISABLE_GIT", "true")  # wandb's git probing must not touch the repo's index
    monkeypatch.delenv("WANDB_API_KEY", raising=False)


def inspect_records(run_dir: Path) -> list[dict]:
    """Every record of the run's .wandb file (works on an unfinished or killed run too)."""
    out = subprocess.run(
        [WANDB_CLI, "leet", "inspect", "--json", str(run_dir)], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    return [json.loads(line) for line in out.stdout.splitlines() if line.strip()]


def inspect_summary(run_dir: Path) -> dict:
    out = subprocess.run(
        [WANDB_CLI, "leet", "inspect", "--summary", "--json", str(run_dir)], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def history(records: list[dict]) -> list[dict]:
    return [r["history"]["item"] for r in records if r.get("type") == "history"]


def logged_steps(records: list[dict], key: str) -> list[int]:
    """global_step of every history row that has `key` (or a nested `key.*`)."""
    return [int(h["global_step"]) for h in history(records) if any(k == key or k.startswith(key + ".") for k in h)]


def _report() -> ClassificationReport:
    labels = np.array([0, 1, 2, 1])
    return ClassificationReport(
        ["zero", "one", "two"],
        np.array([[5, 1, 0], [0, 4, 0], [1, 0, 3]]),
        np.zeros((4, 28, 28), np.uint8),
        labels,
        np.array([0, 1, 0, 1]),
    )


def test_offline_run_round_trip(tmp_path):
    run_dir = tmp_path / "run-1"
    run_dir.mkdir()
    w = WandbWriter(run_dir, CONFIG, name="nice name", mode="offline", fit_interval=0.0)
    assert w.active and w.wait_ready(60), w.info
    info = w.info
    assert info["mode"] == "offline" and info["url"] is None and info["id"] == "run-1"
    assert Path(info["dir"]).parent == run_dir / "wandb"
    assert info["sync_command"] == f"wandb sync {info['dir']}"

    w.write_hparams(CONFIG)
    x = np.linspace(-1, 1, 20)
    w.write_regression(0, RegressionSnapshot(x, x, 0.0, 0.0, 1.0, 0.0))
    for step in STEPS:
        w.write_scalars(step, {"train/loss": 1 / step, "train/acc": step / 100}, Progress(step, 100))
        w.flush()
    w.write_scalars(100, {"test/acc": 0.75})  # same step as the last chunk, after its flush
    w.write_histograms(100, {"params/w": np.arange(10.0)})
    w.write_classification(100, _report())
    w.write_summary({"test/acc": 0.75, "train/loss": 0.01})
    w.close("finished")

    summary = inspect_summary(info["dir"])
    assert summary["state"] == "finished" and summary["exit_code"] == 0
    assert summary["name"] == "nice name" and summary["project"] == "jax-dashboard"
    assert summary["config"]["hidden"] == [32] and summary["config"]["dataset"] == "fashion_mnist"
    assert summary["summary"]["test/acc"] == 0.75 and summary["summary"]["train/loss"] == 0.01
    assert summary["summary"]["run/state"] == "finished"

    records = inspect_records(info["dir"])
    assert logged_steps(records, "train/loss") == STEPS
    assert logged_steps(records, "test/acc") == [100], "a late row keeps its step as global_step"
    assert logged_steps(records, "params/w") == [100]
    assert logged_steps(records, "regression/fit") == [0]
    assert logged_steps(records, "test/predictions") == [100]
    assert logged_steps(records, "test/confusion_matrix_table") == [100]
    metrics = {
        r["metric"].get("glob_name") or r["metric"].get("name"): r["metric"]
        for r in records
        if r.get("type") == "metric"
    }
    assert metrics["*"]["step_metric"] == "global_step"


def test_flushed_rows_reach_the_file_before_close(tmp_path):
    w = WandbWriter(tmp_path, CONFIG, mode="offline")
    assert w.wait_ready(60), w.info  # rows logged before the run exists wait for it (next test)
    for step in STEPS[:3]:
        w.write_scalars(step, {"train/loss": 1.0})
        w.flush()
    deadline = time.monotonic() + 10  # the wandb-core service writes the file asynchronously
    while logged_steps(inspect_records(w.info["dir"]), "train/loss") != STEPS[:3] and time.monotonic() < deadline:
        time.sleep(0.2)
    assert logged_steps(inspect_records(w.info["dir"]), "train/loss") == STEPS[:3], (
        "committed at flush, not at the next step"
    )
    w.close("stopped")
    assert inspect_summary(w.info["dir"])["exit_code"] == 0


def test_resume_continues_the_run_id_in_a_group(tmp_path):
    run_dir = tmp_path / "member-0"
    run_dir.mkdir()
    first = WandbWriter(run_dir, CONFIG, mode="offline", group="pop-1")
    first.write_scalars(10, {"train/loss": 1.0})
    first.close("stopped")
    resumed = WandbWriter(run_dir, CONFIG, mode="offline", group="pop-1", resume=True)
    resumed.write_scalars(20, {"train/loss": 0.5})
    resumed.close()
    folders = sorted((run_dir / "wandb").glob("offline-run-*"))
    assert len(folders) == 2 and resumed.info["id"] == first.info["id"] == "member-0"
    runs = [next(r["run"] for r in inspect_records(f) if r.get("type") == "run") for f in folders]
    assert [r["run_id"] for r in runs] == ["member-0", "member-0"]
    assert [r["run_group"] for r in runs] == ["pop-1", "pop-1"]
    assert runs[1].get("resume") is True and not runs[0].get("resume")
    assert [logged_steps(inspect_records(f), "train/loss") for f in folders] == [[10], [20]]


def test_rows_logged_while_init_is_running_are_kept(tmp_path):
    (tmp_path / "status.json").write_text("{}")
    w = WandbWriter(tmp_path, CONFIG, mode="offline")
    assert not w._ready.is_set(), "the constructor returned before wandb.init finished"
    for step in STEPS[:3]:  # training goes on meanwhile; these rows wait for the run
        w.write_scalars(step, {"train/loss": float(step)})
        w.flush()
    w.write_summary({"train/loss": 0.5})
    w.close("finished")
    assert logged_steps(inspect_records(w.info["dir"]), "train/loss") == STEPS[:3]
    assert inspect_summary(w.info["dir"])["summary"]["train/loss"] == 0.5, "the final summary wins over the rows"
    status = json.loads((tmp_path / "status.json").read_text())
    assert status["wandb"]["sync_command"] == f"wandb sync {w.info['dir']}", "info reaches status.json when ready"


@pytest.mark.parametrize(("state", "code"), [("failed", 1), ("diverged", 3)])
def test_failed_runs_finish_with_nonzero_exit_code(tmp_path, state, code):
    w = WandbWriter(tmp_path, CONFIG, mode="offline")
    w.write_scalars(1, {"train/loss": float("nan")})
    w.close(state, "Loss became nan")
    summary = inspect_summary(w.info["dir"])
    assert summary["exit_code"] == code and summary["state"] == "failed"
    assert summary["summary"]["run/message"] == "Loss became nan"


def test_auto_mode_is_offline_without_a_key_and_online_with_one(monkeypatch, tmp_path):
    assert resolve_mode("auto") == "offline"
    monkeypatch.setenv("WANDB_API_KEY", "x" * 40)
    assert resolve_mode("auto") == "online"
    monkeypatch.delenv("WANDB_API_KEY")
    (tmp_path / "home" / ".netrc").write_text("machine 127.0.0.1:9\n  login user\n  password " + "y" * 40 + "\n")
    (tmp_path / "home" / ".netrc").chmod(0o600)
    assert resolve_mode("auto") == "online", "wandb's own netrc lookup for WANDB_BASE_URL"
    assert resolve_mode("disabled") == "disabled"
    with pytest.raises(ValueError):
        resolve_mode("sometimes")


def test_online_failure_falls_back_to_offline_and_never_raises(tmp_path, monkeypatch):
    monkeypatch.setenv("WANDB_MODE", "online")
    monkeypatch.setenv("WANDB_API_KEY", "x" * 40)  # accepted locally; the server (closed port) never answers
    monkeypatch.setenv("JAXDASH_WANDB_INIT_TIMEOUT", "2")
    t0 = time.monotonic()
    w = WandbWriter(tmp_path, CONFIG, mode="online")
    assert time.monotonic() - t0 < 1.0, "init runs in the background: training never waits for W&B"
    assert w.wait_ready(60) and time.monotonic() - t0 < 30
    assert w.active and w.info["mode"] == "offline" and w.info["error"]
    w.write_scalars(5, {"train/loss": 0.5})
    w.close()
    assert inspect_summary(w.info["dir"])["state"] == "finished"


def test_bad_mode_disables_the_writer_without_raising(tmp_path):
    w = WandbWriter(tmp_path, CONFIG, mode="sometimes")
    assert not w.active and w.info["mode"] == "disabled" and "sometimes" in w.info["error"]
    w.write_scalars(1, {"train/loss": 1.0})
    w.flush()
    w.close()
    assert not (tmp_path / "wandb").exists()
