"""Bad input and impatient users: one clear line naming the setting, never a traceback; two quick SIGTERMs stop cleanly."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from runstore import run_folder
from runstore.run_folder import RunFolder

ROOT = Path(__file__).resolve().parents[1]


def cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "training", *args, "--wandb", "disabled", "--quiet"]
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout)


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["regression", "--steps", "1000000000000"], "--steps: Steps must be <= 1e+08 (got 1e+12)."),
        (["mnist", "--hidden", "100000,100000"], "--hidden: Hidden layers must be <= 65536 (got 100000)."),
        (["mnist", "--hidden", "60000,60000"], "GiB for params, gradients and Adam's moments"),
        (["mnist", "--lr", "-1"], "--lr: Learning rate must be > 0 (got -1)."),
        (["gan"], "error: unknown task 'gan'; use one of regression, mnist"),
    ],
)
def test_bad_values_get_one_message_naming_the_setting(args, expected, tmp_path):
    out = cli(*args, "--runs-root", str(tmp_path))
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert expected in out.stderr
    assert not any(tmp_path.iterdir())  # nothing was created for a run that cannot start


def test_run_dir_holding_other_files_is_refused(tmp_path):
    (tmp_path / run_folder.RECORDS).write_text('{"step": 1}\n')
    out = cli("regression", "--run-dir", str(tmp_path))
    assert out.returncode == 2 and "is not empty (it may hold another run)" in out.stderr
    assert (tmp_path / run_folder.RECORDS).read_text() == '{"step": 1}\n'  # untouched


def test_two_quick_sigterms_stop_cleanly_with_a_checkpoint(tmp_path):
    run_dir = tmp_path / "run"
    cmd = [
        sys.executable,
        "-m",
        "training",
        "regression",
        "--steps",
        "10000000",
        "--points",
        "10000",
        "--run-dir",
        str(run_dir),
        "--wandb",
        "disabled",
        "--quiet",
    ]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while RunFolder(run_dir).status().get("step", 0) < 100 and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0 and "Traceback" not in err, err[-2000:]
    status = RunFolder(run_dir).status()
    assert status["state"] == "stopped"
    from training.runs.checkpoint import latest_step

    assert latest_step(run_dir) == status["step"]  # it can be resumed exactly where it stopped
