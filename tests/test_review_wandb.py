"""W&B runs as a reviewer reads them back (#21), with `wandb leet inspect --json` on real processes:
one W&B run per run after kill -9 and a resume without the starting environment (one project,
one group, one id, no step in two folders), population members never sharing an id under
`$WANDB_RUN_ID`, and class names with "/" kept whole in the PR chart."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from runstore import run_folder, run_store
from runstore.run_folder import RunFolder
from runwriters.base import Tracking
from runwriters.wandb.writer import WandbWriter
from tests import wandb_leet
from tests.fixtures_runs import hold_env, wait_held
from training.runs.checkpoint import checkpoint_steps

ROOT = Path(__file__).resolve().parents[1]


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """W&B offline, isolated in tmp, never reaching a network; no WANDB_* but what `extra` sets."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("WANDB_")}
    return {
        **env,
        "PYTHONUNBUFFERED": "1",
        "WANDB_MODE": "offline",
        "WANDB_SILENT": "true",
        "WANDB_BASE_URL": "http://127.0.0.1:9",
        "WANDB_DISABLE_GIT": "true",
        "WANDB_CONFIG_DIR": str(tmp_path / "wandb-config"),
        "WANDB_CACHE_DIR": str(tmp_path / "wandb-cache"),
        "WANDB_DATA_DIR": str(tmp_path / "wandb-data"),
        **extra,
    }


def inspect(folder: Path) -> list[dict]:
    out = wandb_leet.inspect(folder, "--json")
    assert out.returncode == 0, out.stderr
    return [json.loads(line) for line in out.stdout.splitlines() if line.strip()]


def run_record(records: list[dict]) -> dict:
    (run,) = [r["run"] for r in records if r.get("type") == "run"]
    return run


def history_steps(records: list[dict]) -> list[int]:
    return [int(r["history"]["item"]["global_step"]) for r in records if r.get("type") == "history"]


def test_kill_and_resume_without_the_environment_stay_one_wandb_run(tmp_path: Path) -> None:
    """Started under WANDB_PROJECT/GROUP/DIR, killed -9 past a checkpoint and resumed at once with none of
    them set: the killed trainer's wandb-core service may still be writing its folder when the resume reads
    it, and the replayed steps it holds (media rows included) must not be logged a second time."""
    run_dir, wandb_dir, held = tmp_path / "run", tmp_path / "wandb-elsewhere", tmp_path / "held"
    wandb_dir.mkdir()
    started = _env(tmp_path, WANDB_PROJECT="proj-a", WANDB_RUN_GROUP="grp-a", WANDB_DIR=str(wandb_dir))
    args = ["--points", "1000000", "--steps", "3000", "--log-every", "100", "--ckpt-every", "1000", "--quiet"]
    cmd = [sys.executable, "-m", "training", "regression", "--run-dir", str(run_dir), *args]
    # Held once the W&B run exists and 8 chunks past the first checkpoint (step 1,000 of 3,000; the next is at
    # 2,000): the killed W&B folder holds steps past the newest checkpoint.
    env = hold_env(started, held, checkpoints=1, chunks=8, wandb_ready=True)
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_held(proc, held)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    assert RunFolder(run_dir).status()["state"] == "crashed", proc.stderr.read().decode()[-2000:]
    newest_checkpoint = max(checkpoint_steps(run_dir))

    resume = [sys.executable, "-m", "training", "resume", str(run_dir), "--quiet"]
    out = subprocess.run(resume, cwd=ROOT, env=_env(tmp_path), capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]

    folders = sorted((wandb_dir / "wandb").glob("offline-run-*"))
    assert len(folders) == 2 and not (run_dir / "wandb").exists(), "both parts under the starting WANDB_DIR"
    records = [inspect(f) for f in folders]
    runs = [run_record(r) for r in records]
    assert {r["run_id"] for r in runs} == {(run_dir / "wandb_id").read_text().strip()}
    assert [r["project"] for r in runs] == ["proj-a", "proj-a"]
    assert [r["run_group"] for r in runs] == ["grp-a", "grp-a"]
    first, second = (history_steps(r) for r in records)
    assert max(first) > newest_checkpoint, "the killed process logged past a checkpoint"
    assert not set(first) & set(second), "no step in both folders"
    logged = sorted({rec["step"] for rec in RunFolder(run_dir).records()[0]})
    assert sorted(first + second) == logged, "together every step of metrics.jsonl, once"
    sync = RunFolder(run_dir).status()["wandb"]["sync_command"]
    assert sync == "wandb sync " + " ".join(map(str, folders))


def test_population_members_get_their_own_ids_under_wandb_run_id(tmp_path: Path, runs_root: Path) -> None:
    env = _env(tmp_path, WANDB_RUN_ID="fixedid7", JAXDASH_RUNS=str(runs_root))
    cmd = [sys.executable, "-m", "training", "regression", "--population", "lr=0.01,0.02", "--steps", "50", "--quiet"]
    out = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    members = sorted(
        run_store.run_folders(runs_root), key=lambda d: json.loads((d / run_folder.CONFIG).read_text())["member"]
    )
    ids = []
    for member in members:
        (folder,) = (member / "wandb").glob("offline-run-*")
        records = inspect(folder)
        ids.append(run_record(records)["run_id"])
        config = run_record(records)["config"]["update"]
        assert config["task"] == "regression" and config["member"] == len(ids) - 1 and config["group"]
    assert ids == ["fixedid7-m0", "fixedid7-m1"]


def test_a_class_name_with_a_slash_stays_whole_in_the_pr_chart(tmp_path: Path, monkeypatch) -> None:
    for key, value in _env(tmp_path).items():
        monkeypatch.setenv(key, value)
    labels = np.array([0, 1, 1, 0])
    writer = WandbWriter(tmp_path, {"lr": 0.1}, Tracking("offline"))
    writer.write_scalars(10, {"train/loss": 1.0})
    writer.write_pr_curves(
        10,
        {
            "test/pr/T-shirt/top": (labels == 0, [0.9, 0.1, 0.2, 0.8]),
            "test/pr/Trouser": (labels == 1, [0.1, 0.9, 0.7, 0.2]),
        },
    )
    writer.close()
    records = wandb_leet.finished_records(Path(writer.info["dir"]))  # wandb-core ends the file just after close
    updates = [r["config"].get("update", {}) for r in records if r.get("type") == "config"]
    charts = sorted(k for u in updates for k in u if "/pr" in k)
    assert len(charts) == 1 and charts[0].endswith("test/pr"), charts
    (path,) = Path(writer.info["dir"], "files", "media", "table", "test").glob("pr_table_*.table.json")
    classes = {row[0] for row in json.loads(path.read_text())["data"]}
    assert classes == {"T-shirt/top", "Trouser"}


def test_one_final_number_everywhere_and_no_writer_warnings(tmp_path: Path, fashion_dir: Path) -> None:
    """The final train/loss (mean over the last epoch) is the same in final_metrics.json, W&B's
    summary.final and TensorBoard's `final/*` (read with its own event reader), while the chunk means
    differ; W&B's config carries the task; the output has no 'does not support' warnings."""
    from tensorboard.backend.event_processing import event_accumulator as ea

    run_dir = tmp_path / "run"
    args = ["--dataset", "fashion_mnist", "--data-dir", str(fashion_dir), "--train-limit", "3000"]
    args += ["--test-limit", "500", "--epochs", "1", "--log-every", "20", "--wandb", "offline"]
    cmd = [sys.executable, "-m", "training", "mnist", "--run-dir", str(run_dir), *args]
    out = subprocess.run(cmd, cwd=ROOT, env=_env(tmp_path), capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "does not support" not in out.stderr + out.stdout
    final = json.loads((run_dir / run_folder.FINAL_METRICS).read_text())
    chunk_means = [r["train/loss"] for r in RunFolder(run_dir).records()[0] if "train/loss" in r]
    assert final["train/loss"] != pytest.approx(chunk_means[-1]), "the epoch mean, not the last chunk's"

    folder = Path(RunFolder(run_dir).status()["wandb"]["dir"])
    summary = json.loads(wandb_leet.inspect(folder, "--summary", "--json").stdout)
    assert summary["summary"]["final"] == pytest.approx(final)
    assert summary["config"]["task"] == "mnist"

    acc = ea.EventAccumulator(RunFolder(run_dir).status()["tensorboard"]["logdir"])
    acc.Reload()
    tb_final = {t[len("final/") :]: acc.Scalars(t)[-1].value for t in acc.Tags()["scalars"] if t.startswith("final/")}
    assert tb_final == pytest.approx(final, rel=1e-6)


def test_a_non_scalar_metric_is_named_in_one_line(tmp_path: Path) -> None:
    """A step returning an array as a metric fails with the metric's name and the fix, not a TypeError."""
    (tmp_path / "vector_metric.py").write_text(
        "import jax.numpy as jnp\n"
        "from examples.sine import SineTask\n\n\n"
        "class VectorMetric(SineTask):\n"
        "    name = 'vector_metric'\n\n"
        "    def step(self, state, batch):\n"
        "        state, metrics = super().step(state, batch)\n"
        "        return state, {**metrics, 'errors': jnp.abs(batch['y'][:3])}\n"
    )
    env = _env(tmp_path, PYTHONPATH=f"{tmp_path}{os.pathsep}{ROOT}")
    cmd = [sys.executable, "-m", "training", "vector_metric:VectorMetric", "--steps", "20", "--quiet"]
    cmd += ["--run-dir", str(tmp_path / "run"), "--wandb", "disabled"]
    out = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode != 0 and "Traceback" not in out.stderr, out.stderr[-2000:]
    assert "metric 'errors' is an array of shape (3,) per step" in out.stderr + out.stdout
    status = RunFolder(tmp_path / "run").status()
    assert status["state"] == "failed" and "'errors'" in status["message"]


def output_lines(folder: Path) -> list[str]:
    """The lines of the W&B run's Logs tab: captured console output and `write_logs` lines."""
    kinds = ("output", "output_raw", "output_logger")
    found = [r[r["type"]].get("line", "") for r in inspect(folder) if r.get("type") in kinds]
    return "".join(found).splitlines()


def test_a_population_members_logs_tab_holds_its_own_lines(tmp_path: Path, runs_root: Path) -> None:
    """One process trains both members; each W&B Logs tab shows that member's numbers, not the shared output."""
    env = _env(tmp_path, JAXDASH_RUNS=str(runs_root))
    cmd = [sys.executable, "-m", "training", "regression", "--population", "lr=0.001,0.02", "--steps", "200"]
    out = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    for member in run_store.run_folders(runs_root):
        (folder,) = (member / "wandb").glob("offline-run-*")
        lines = output_lines(folder)
        final_loss = json.loads((member / run_folder.FINAL_METRICS).read_text())["train/loss"]
        assert lines[0].startswith("step 0/200") and "run finished" in lines
        assert any(ln.split() == ["train/loss", f"{final_loss:.6g}"] for ln in lines), lines
        assert not any("W&B" in ln or "wandb" in ln for ln in lines)  # none of the process's own output


def test_pbt_moves_the_lr_in_wandb_config_and_tensorboard_names_each_trial(tmp_path: Path, runs_root: Path) -> None:
    """PBT moves the slowest member's lr: W&B config and TensorBoard's config text say the lr it trains with;
    each HParams trial starts with the run's readable name, not a run id that reads alike in every row."""
    from tensorboard.backend.event_processing import event_accumulator as ea
    from tensorboard.plugins.hparams import metadata as hp_metadata

    cmd = [sys.executable, "-m", "training", "regression", "--population", "lr=0.0001,0.001,0.3,2.0"]
    cmd += ["--pbt-interval", "50", "--steps", "200", "--runs-root", str(runs_root), "--quiet"]
    out = subprocess.run(cmd, cwd=ROOT, env=_env(tmp_path), capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    (slowest,) = [d for d in run_store.run_folders(runs_root) if "-m0-" in d.name]
    lr_now = [r["pbt/lr"] for r in RunFolder(slowest).records()[0] if "pbt/lr" in r][-1]
    assert lr_now != pytest.approx(0.0001)  # PBT moved it

    (folder,) = (slowest / "wandb").glob("offline-run-*")
    configs = [r["config"]["update"] for r in inspect(folder) if r.get("type") == "config"]
    assert configs and configs[-1]["lr"] == pytest.approx(lr_now)

    acc = ea.EventAccumulator(str(slowest / run_folder.TENSORBOARD / "lr=0.0001"), size_guidance={ea.TENSORS: 0})
    acc.Reload()
    start = hp_metadata.parse_session_start_info_plugin_data(
        acc.PluginTagToContent("hparams")[hp_metadata.SESSION_START_INFO_TAG]
    )
    assert start.group_name == f"lr=0.0001 ({slowest.name})"
    assert start.hparams["lr"].number_value == pytest.approx(0.0001)  # the HParams row: the setting it started with
    config_text = acc.Tensors("config/text_summary")[-1].tensor_proto.string_val[0].decode()
    assert f"| lr | {lr_now:.6g} |" in config_text
