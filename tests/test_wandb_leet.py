"""tests/wandb_leet.py prints what `wandb leet inspect` prints, on a real offline W&B run, for every PATH form."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests import wandb_leet

SCRIPT = """
import wandb
run = wandb.init(project="leet", config={"lr": 0.1})
for step in range(3):
    run.log({"loss": 1.0 / (step + 1)})
run.summary["best"] = 0.25
run.finish()
"""


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([wandb_leet.WANDB_CLI, "leet", "inspect", *args], capture_output=True, text=True, timeout=60)


def test_inspect_prints_the_clis_output(tmp_path: Path) -> None:
    """A .wandb file, its run folder and the wandb folder, with --json and --summary --json: the same bytes."""
    env = {**os.environ, "WANDB_DIR": str(tmp_path), "WANDB_MODE": "offline", "WANDB_SILENT": "true"}
    subprocess.run([sys.executable, "-c", SCRIPT], env=env, check=True, timeout=120, cwd=tmp_path)
    (wandb_file,) = tmp_path.glob("wandb/offline-run-*/run-*.wandb")
    for path, flags in [
        (wandb_file, ("--json",)),
        (wandb_file.parent, ("--summary", "--json")),
        (tmp_path / "wandb", ("--json",)),
    ]:
        ours, theirs = wandb_leet.inspect(path, *flags), _cli(*flags, str(path))
        assert (ours.returncode, ours.stdout) == (theirs.returncode, theirs.stdout), (path, flags)
        assert '"loss"' in ours.stdout or '"best"' in ours.stdout


def test_a_missing_path_fails_as_the_cli_does(tmp_path: Path) -> None:
    """The CLI's exit code 1 and its message naming the path."""
    missing = tmp_path / "nowhere"
    ours, theirs = wandb_leet.inspect(missing, "--json"), _cli("--json", str(missing))
    assert ours.returncode == theirs.returncode == 1
    assert ours.stderr.strip() == theirs.stderr.strip().splitlines()[-1] == f"Error: Path does not exist: {missing}"
