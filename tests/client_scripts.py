"""Run a user's script as a real subprocess against a runs root, and read what it left (for the client tests)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

from runstore import run_store
from runstore.run_folder import RunFolder
from tests import wandb_leet

ROOT = Path(__file__).resolve().parents[1]


def script_env(root: Path, **extra: str) -> dict[str, str]:
    """The environment a script runs in: its runs root, the repository importable, W&B offline and silent."""
    # W&B's variables left out (a test sets those it wants), but for conftest's isolated cache/config folders
    env = {k: v for k, v in os.environ.items() if not k.startswith("WANDB_") or k.endswith("_DIR")}
    env.pop("WANDB_DIR", None)
    env.update(JAXDASH_RUNS=str(root), PYTHONPATH=str(ROOT), WANDB_MODE="offline", WANDB_SILENT="true")
    env["WANDB_X_DISABLE_STATS"] = "true"  # system metrics off unless a test turns them on (as conftest.py)
    env.update(extra)
    return env


def write(tmp_path: Path, code: str, name: str = "script.py") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(code))
    return path


def run(tmp_path: Path, code: str, timeout: float = 300, **env: str) -> tuple[subprocess.CompletedProcess, Path]:
    """Run `code` to its end: (the finished process, the runs root)."""
    root = tmp_path / "runs"
    path = write(tmp_path, code)
    out = subprocess.run([sys.executable, str(path)], cwd=tmp_path, env=script_env(root, **env), capture_output=True,
                         text=True, timeout=timeout)  # fmt: skip
    return out, root


def start(tmp_path: Path, code: str, **env: str) -> tuple[subprocess.Popen, Path]:
    """Start `code`: (the process, the runs root)."""
    root = tmp_path / "runs"
    path = write(tmp_path, code)
    proc = subprocess.Popen([sys.executable, str(path)], cwd=tmp_path, env=script_env(root, **env),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    return proc, root


def only_run(root: Path) -> Path:
    (run_dir,) = run_store.run_folders(root)
    return run_dir


def rows(run_dir: Path) -> list[dict[str, Any]]:
    """metrics.jsonl's records less the run store's own fields (wall, ts)."""
    return [{k: v for k, v in r.items() if k not in ("wall", "ts")} for r in RunFolder(run_dir).records()[0]]


def wandb_records(wandb_dir: Path) -> list[dict[str, Any]]:
    """Every record of a W&B offline run folder, through W&B's own reader (`wandb leet inspect --json`)."""
    out = wandb_leet.inspect(wandb_dir, "--json")
    assert out.returncode == 0, out.stderr
    return [json.loads(line) for line in out.stdout.splitlines() if line.strip()]


def wandb_history(wandb_dir: Path) -> list[dict[str, Any]]:
    """W&B's history rows with a metric, less W&B's own keys (_runtime, _timestamp)."""
    out = []
    for r in wandb_records(wandb_dir):
        if r.get("type") == "history":
            item = {k: v for k, v in r["history"]["item"].items() if k not in ("_runtime", "_timestamp")}
            if set(item) - {"_step"}:
                out.append(item)
    return out


def wandb_run_record(wandb_dir: Path) -> dict[str, Any]:
    """The run record of a W&B offline run (project, group, job type, tags, notes, id, config)."""
    return next(r["run"] for r in wandb_records(wandb_dir) if r.get("type") == "run")
