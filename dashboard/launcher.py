"""Start and stop training runs as their own processes, and serve TensorBoard.

No Streamlit here: pages call these functions and cache what they return.
A run started here is exactly a CLI run (`python -m training ...`), so the run
directory is the only thing the page and the process share. Until the process
has written its config.json, `launch.json` (pid, command) lets any page or tab
see that the run is starting, or that it failed to start.
"""

from __future__ import annotations

import atexit
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from training import run_store
from training.config import Config, config_to_dict

REPO_ROOT = Path(__file__).resolve().parent.parent
WANDB_MODES = ("auto", "offline", "online", "disabled")


def runs_root() -> Path:
    """Absolute runs root: $JAXDASH_RUNS, else ./runs (resolved against the current directory)."""
    return run_store.runs_root().resolve()


def build_command(cfg: Config, run_dir: Path, name: str | None, wandb_mode: str = "auto") -> list[str]:
    """The exact CLI command that trains `cfg` into `run_dir`."""
    flags: list[str] = []
    for key, value in config_to_dict(cfg).items():
        if key == "task" or value is None:
            continue
        if isinstance(value, (list, tuple)):
            value = ",".join(str(v) for v in value)
        flags += [f"--{key.replace('_', '-')}", str(value)]
    cmd = [
        sys.executable,
        "-m",
        "training",
        cfg.task,
        *flags,
        "--run-dir",
        str(run_dir),
        "--wandb",
        wandb_mode,
        "--quiet",
    ]
    if name:
        cmd += ["--name", name]
    return cmd


def launch(cfg: Config, name: str | None = None, wandb_mode: str = "auto", root: Path | None = None) -> Path:
    """Start `cfg` as a detached training process and return its run directory.

    The process outlives the page (own session), writes stdout/stderr to
    process.log in the run directory and runs from the repository root.
    """
    if wandb_mode not in WANDB_MODES:
        raise ValueError(f"W&B mode must be one of {', '.join(WANDB_MODES)} (got {wandb_mode!r}).")
    run_dir = run_store.new_run_dir(root or runs_root(), cfg.task, name)
    cmd = build_command(cfg, run_dir, name, wandb_mode)
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with open(run_dir / "process.log", "wb") as log:
        proc = subprocess.Popen(
            cmd,
            cwd=REPO_ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    run_store.atomic_write_json(
        run_dir / "launch.json",
        {"pid": proc.pid, "command": cmd, "launched": time.time(), "task": cfg.task, "name": name or run_dir.name},
    )
    return run_dir


def launch_info(run_dir: Path) -> dict[str, Any]:
    """launch.json of a run started from the page ({} for CLI runs)."""
    return run_store.read_json(Path(run_dir) / "launch.json", {}) or {}


def stop(run_dir: Path) -> bool:
    """Ask a run to stop cleanly: the stop file plus SIGTERM (the run finishes its chunk, state "stopped").

    Returns True if a live process was signalled.
    """
    run_dir = Path(run_dir)
    run_store.request_stop(run_dir)
    pid = run_store.read_status(run_dir).get("pid") or launch_info(run_dir).get("pid")
    if not run_store.pid_alive(pid):
        return False
    try:
        os.kill(int(pid), signal.SIGTERM)
    except ProcessLookupError:
        return False
    return True


def log_tail(run_dir: Path, lines: int = 3) -> str:
    """Last non-empty lines of process.log (for a run that died before it could write status)."""
    try:
        text = (Path(run_dir) / "process.log").read_text(errors="replace")
    except OSError:
        return ""
    return "\n".join([ln for ln in text.splitlines() if ln.strip()][-lines:])


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class TensorBoard:
    """A TensorBoard server process over the runs root."""

    proc: subprocess.Popen
    url: str
    logdir: Path

    def alive(self) -> bool:
        return self.proc.poll() is None

    def close(self) -> None:
        if self.alive():
            self.proc.terminate()


def start_tensorboard(logdir: Path, port: int | None = None, wait_s: float = 30.0) -> TensorBoard:
    """Start `tensorboard --logdir logdir` on 127.0.0.1 and wait until it answers.

    Raises:
      RuntimeError: if it exits or does not answer within `wait_s` (message from its log).
    """
    port = port or free_port()
    exe = Path(sys.executable).with_name("tensorboard")
    cmd = [
        str(exe) if exe.exists() else "tensorboard",
        "--logdir",
        str(logdir),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
    ]
    log_path = Path(tempfile.gettempdir()) / f"jaxdash-tensorboard-{port}.log"
    Path(logdir).mkdir(parents=True, exist_ok=True)
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True
        )
    url = f"http://127.0.0.1:{port}/"
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            last = log_path.read_text(errors="replace").strip().splitlines()[-1:] or ["no output"]
            raise RuntimeError(f"TensorBoard exited ({last[0]}).")
        try:
            with urllib.request.urlopen(url, timeout=1):
                tb = TensorBoard(proc, url, Path(logdir))
                atexit.register(tb.close)  # TensorBoard lives as long as the dashboard server
                return tb
        except OSError:
            time.sleep(0.3)
    proc.terminate()
    raise RuntimeError(f"TensorBoard did not answer on {url} within {wait_s:.0f} s.")
