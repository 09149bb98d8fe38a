"""A full or read-only disk: one line naming the path and the cause, a failed status, no torn files.

Runs the real CLI on a small tmpfs (needs root to mount, as in CI; skipped where mounting is refused).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from runstore import run_folder
from runstore.run_folder import RunFolder

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def mount_tmpfs(tmp_path):
    mounted = []

    def mount(size: str, readonly: bool = False) -> Path:
        target = tmp_path / f"fs{len(mounted)}"
        target.mkdir()
        opts = f"size={size}" + (",ro" if readonly else "")
        out = subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tmpfs", str(target)], capture_output=True, text=True)
        if out.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here: {out.stderr.strip()}")
        mounted.append(target)
        return target

    yield mount
    for target in mounted:
        subprocess.run(["umount", str(target)], check=False)


def train(*args: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "training", "regression", "--wandb", "disabled", "--quiet", *args]
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_full_disk_fails_the_run_with_one_line_and_no_torn_files(mount_tmpfs):
    fs = mount_tmpfs("600k")
    # No checkpoint by steps (the one every 30 s comes long after the ~2 s this disk takes to fill): with one every
    # 200 steps, whichever write came first filled the disk, a metrics line or a checkpoint (whose own line reads
    # "Saving the checkpoint failed: ...", test_a_full_disk_reported_through_resource_exhausted_reads_as_a_full_disk).
    out = train("--runs-root", str(fs / "runs"), "--steps", "200000", "--log-every", "10", "--ckpt-every", "0")
    assert out.returncode == 1
    assert "Traceback" not in out.stderr, out.stderr[-3000:]
    (run_dir,) = (fs / "runs").iterdir()
    last = out.stderr.strip().splitlines()[-1]
    assert last.startswith(f"error: {run_dir.name}: No space left on device writing {run_dir}")
    status = RunFolder(run_dir).status()
    assert status["state"] == "failed" and status["message"].startswith("No space left on device writing")
    raw = (run_dir / run_folder.RECORDS).read_bytes()
    assert raw.endswith(b"\n") and all(json.loads(line) for line in raw.splitlines())
    assert not [p for p in fs.rglob("*") if p.name.endswith(".tmp")]


def test_read_only_runs_root_is_one_line_naming_the_folder(mount_tmpfs):
    fs = mount_tmpfs("1m", readonly=True)
    out = train("--runs-root", str(fs / "runs"), "--steps", "10")
    assert out.returncode != 0 and "Traceback" not in out.stderr, out.stderr[-3000:]
    assert (
        out.stderr.strip().splitlines()[-1]
        == f"error: Read-only file system writing {fs / 'runs'}. Pick a writable --runs-root."
    )


def test_a_full_disk_reported_through_resource_exhausted_reads_as_a_full_disk(tmp_path: Path) -> None:
    """TensorStore (Orbax's checkpoints) reports ENOSPC as a RESOURCE_EXHAUSTED error, not an OSError: it
    once read "Out of memory" on CI. A message naming the full disk wins over the status code."""
    from training.runs.lifecycle import failure

    exc = ValueError(f'RESOURCE_EXHAUSTED: Error writing "{tmp_path}/ckpt/1/d/0": No space left on device')
    state, message = failure(exc, tmp_path)
    assert state == "failed" and message.startswith(f"No space left on device writing {tmp_path}/ckpt")
    assert "Free some space, then resume the run." in message
    oom = ValueError("RESOURCE_EXHAUSTED: Out of memory while trying to allocate 17179869184 bytes.")
    assert failure(oom, tmp_path)[1].startswith("Out of memory: the model or data do not fit.")
