"""Start `python -m training ...` as the processes of one `jax.distributed` job, named by the CLI's flags.

Real processes on localhost (CPU, forced devices), a real coordinator, gloo collectives; used by
tests/test_multihost_flags.py and tests/test_multihost_resume.py.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from runstore import run_folder

ROOT = Path(__file__).resolve().parents[1]
TIMEOUT_S = 240  # a process left in a collective the others never join is killed after this


def free_port() -> int:
    """A port nothing listens on (bind(0)), for the job's coordinator."""
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


def start_job(
    argv: Sequence[str], tmp_path: Path, processes: int = 2, devices: int = 4, **env: str
) -> list[subprocess.Popen]:
    """`python -m training *argv` in `processes` processes of `devices` forced CPU devices each, joined by flags.

    Each process's stdout goes to tmp_path/out<i>.txt and stderr to tmp_path/err<i>.txt (read them with `ends`).
    """
    port, procs = free_port(), []
    for i in range(processes):
        extra = {"XLA_FLAGS": f"--xla_force_host_platform_device_count={devices}", "JAX_PLATFORMS": "cpu"}
        extra.update(WANDB_MODE="offline", WANDB_SILENT="true", JAXDASH_HEARTBEAT_S="0.2", **env)
        job = ["--coordinator", f"localhost:{port}", "--num-processes", str(processes), "--process-id", str(i)]
        cmd = [sys.executable, "-m", "training", *argv, *job]
        with open(tmp_path / f"out{i}.txt", "w") as out, open(tmp_path / f"err{i}.txt", "w") as err:
            procs.append(subprocess.Popen(cmd, cwd=ROOT, env={**os.environ, **extra}, stdout=out, stderr=err))
    return procs


def kill(procs: Sequence[subprocess.Popen]) -> None:
    """Kill what still runs (a failed test must not leave a process waiting in a collective)."""
    for p in procs:
        if p.poll() is None:
            p.kill()
        p.wait(timeout=30)


def ends(procs: Sequence[subprocess.Popen], tmp_path: Path, codes: Sequence[int] | None = None) -> list[dict]:
    """Each process's final JSON line, once all exited (with exit code 0, or `codes`)."""
    try:
        for p in procs:
            p.wait(timeout=TIMEOUT_S)
    finally:
        kill(procs)
    errs = [(tmp_path / f"err{i}.txt").read_text() for i in range(len(procs))]
    assert [p.returncode for p in procs] == list(codes or [0] * len(procs)), [e[-3000:] for e in errs]
    outs = [(tmp_path / f"out{i}.txt").read_text().strip().splitlines() for i in range(len(procs))]
    return [json.loads(lines[-1]) if lines and lines[-1].startswith("{") else {} for lines in outs]


def wait_for(what: str, found: Callable[[], Any], procs: Sequence[subprocess.Popen], timeout: float = 180) -> Any:
    """`found()` once truthy, polled every 50 ms; fails naming `what` if a process exited or time ran out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = found()
        if value:
            return value
        if any(p.poll() is not None for p in procs):
            break
        time.sleep(0.05)
    raise AssertionError(f"never saw {what}; exit codes {[p.poll() for p in procs]}")


def records(run_dir: Path) -> list[dict]:
    """metrics.jsonl's records."""
    return [json.loads(line) for line in (run_dir / run_folder.RECORDS).read_text().splitlines() if line.strip()]
