"""A resumed client run, as real script processes: its W&B copy holds every step once across its offline folders,
and a resume that fails at once (W&B's config.update refusal) removes nothing the run folder held.

The W&B folders are read with W&B's own reader (`wandb leet inspect`, tests/wandb_leet.py).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from runstore import run_folder, wandb_reads
from runstore.run_folder import RunFolder
from tests import wandb_leet
from tests.client_scripts import rows, script_env, write

RESUMED = """
import sys
import jaxdash as wandb

first, count = int(sys.argv[1]), int(sys.argv[2])
run = wandb.init(project="resume-copy", id="twice", resume="allow")
for i in range(first, first + count):
    run.log({"loss": 1.0 / (i + 1), "global_step": 100 + i})  # a key of the script's own named global_step
run.finish()
"""


def _run(tmp_path: Path, script: Path, *args: str) -> subprocess.CompletedProcess:
    out = subprocess.run([sys.executable, str(script), *args], cwd=tmp_path, env=script_env(tmp_path / "runs"),
                         capture_output=True, text=True, timeout=180)  # fmt: skip
    assert out.returncode == 0, out.stderr
    return out


def test_a_resumed_runs_wandb_copy_holds_each_step_once(tmp_path: Path) -> None:
    """Two processes of one run (5 steps, then 4 more): W&B's two offline folders share no step and together
    hold every step of metrics.jsonl, each with the value the run folder has."""
    script = write(tmp_path, RESUMED)
    _run(tmp_path, script, "0", "5")
    _run(tmp_path, script, "5", "4")
    run_dir = tmp_path / "runs" / "twice"
    folders = sorted((run_dir / run_folder.WANDB).glob("offline-run-*"))
    assert len(folders) == 2, folders
    per_folder = []
    for folder in folders:
        history = [r["history"]["item"] for r in wandb_leet.finished_records(folder) if r.get("type") == "history"]
        per_folder.append({int(item["_step"]): item for item in history if "loss" in item})
    first, second = (set(found) for found in per_folder)
    assert first & second == set(), f"steps in both W&B folders: {sorted(first & second)}"
    ours = {r["step"]: r for r in rows(run_dir)}
    assert first | second == set(ours) == set(range(9))
    for found in per_folder:
        for step, item in found.items():
            assert item["loss"] == ours[step]["loss"] and item["global_step"] == 100 + step


FAILING = """
import sys
import jaxdash as wandb

run = wandb.init(project="resume-copy", id="refused", resume="allow", config={"lr": 0.1}, wandb="disabled")
if sys.argv[1] == "again":
    run.config.update({"lr": 0.2})  # W&B refuses a changed value without allow_val_change: the script dies here
for i in range(5):
    run.log({"loss": 1.0 / (i + 1), "acc": i / 10})
run.summary["best"] = "epoch 4"
run.finish()
"""


def test_a_failed_resume_keeps_the_runs_summary(tmp_path: Path) -> None:
    """The second process raises in config.update before logging anything: the run is failed with W&B's
    message, and summary.json, final_metrics.json and metrics.jsonl keep what the first process wrote."""
    script = write(tmp_path, FAILING)
    _run(tmp_path, script, "first")
    run_dir = tmp_path / "runs" / "refused"
    summary, final, records = wandb_reads.summary(run_dir), RunFolder(run_dir).status()["final"], rows(run_dir)
    assert summary == {"loss": 0.2, "acc": 0.4, "best": "epoch 4"}
    out = subprocess.run([sys.executable, str(script), "again"], cwd=tmp_path, env=script_env(tmp_path / "runs"),
                         capture_output=True, text=True, timeout=180)  # fmt: skip
    assert out.returncode == 1 and "allow_val_change" in out.stderr
    status = RunFolder(run_dir).status()
    assert status["state"] == "failed" and "allow_val_change" in status["message"]
    assert wandb_reads.summary(run_dir) == summary
    assert status["final"] == final == {"loss": 0.2, "acc": 0.4}
    assert rows(run_dir) == records
