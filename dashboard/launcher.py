"""Start and stop training runs as their own processes, and serve TensorBoard.

No Streamlit here: pages call these functions and cache what they return.
A run started here is exactly a CLI run (`python -m training ...`), so the run
directory is the only thing the page and the process share. Until the process
has written its config.json, `launch.json` (pid, command) lets any page or tab
see that the run is starting, or that it failed to start. Runs start in the
warm worker when one is ready (dashboard/worker.py), else as a fresh process.
"""

from __future__ import annotations

import atexit
import logging
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dashboard import worker
from training import run_store
from training.config import Config, config_to_dict

REPO_ROOT = worker.REPO_ROOT
WANDB_MODES = ("auto", "offline", "online", "disabled")
log = logging.getLogger(__name__)


def runs_root() -> Path:
    """Absolute runs root: $JAXDASH_RUNS, else ./runs (resolved against the current directory)."""
    return run_store.runs_root().resolve()


def build_command(
    cfg: Config,
    run_dir: Path | None,
    name: str | None,
    wandb_mode: str = "auto",
    *,
    population: Mapping[str, Sequence[str]] | None = None,
    runs_root: Path | None = None,
) -> list[str]:
    """The exact CLI command that trains `cfg` into `run_dir`.

    With `population` ({"lr": [...], "seed": [...]}) it trains one run per combination, each in
    its own new directory under `runs_root` (the CLI picks the names), so `run_dir` is not passed.
    """
    flags: list[str] = []
    for key, value in config_to_dict(cfg).items():
        if key == "task" or value is None:
            continue
        if isinstance(value, (list, tuple)):
            value = ",".join(str(v) for v in value)
        flags += [f"--{key.replace('_', '-')}", str(value)]
    for axis, values in (population or {}).items():
        flags += ["--population", f"{axis}={','.join(str(v) for v in values)}"]
    where = ["--runs-root", str(runs_root)] if population else ["--run-dir", str(run_dir)]
    cmd = [sys.executable, "-m", "training", cfg.task, *flags, *where, "--wandb", wandb_mode, "--quiet"]
    if name:
        cmd += ["--name", name]
    return cmd


def spawn(cmd: list[str], log_path: Path, metrics: Path | None = None) -> tuple[int, str]:
    """Run `cmd` (a `python -m training ...` command) as its own process, output appended to `log_path`.

    The warm worker takes it when one is ready and fits the current environment; else a
    fresh process starts. Either way it outlives the page (own session) and runs from the
    repository root. The next worker starts once `metrics` (the run's metrics.jsonl) changed,
    so its imports do not slow down the run's first steps. Returns (pid, "worker" or "cold").
    """
    env = worker.job_env()
    since = time.time()

    def settled() -> bool:
        return metrics is not None and metrics.exists() and metrics.stat().st_mtime > since

    w = worker.pool().take(env, settled) if worker.enabled() else None
    if w is not None:
        try:
            return w.submit(cmd[3:], log_path, env, REPO_ROOT), "worker"
        except OSError:
            log.warning("warm worker %s died before its job; starting the run cold", w.proc.pid)
    with open(log_path, "ab") as out:
        proc = subprocess.Popen(
            cmd,
            cwd=REPO_ROOT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    return proc.pid, "cold"


def _check_wandb(wandb_mode: str) -> None:
    if wandb_mode not in WANDB_MODES:
        raise ValueError(f"W&B mode must be one of {', '.join(WANDB_MODES)} (got {wandb_mode!r}).")


def launch(cfg: Config, name: str | None = None, wandb_mode: str = "auto", root: Path | None = None) -> Path:
    """Start `cfg` as a detached training process and return its run directory.

    The process writes stdout/stderr to process.log in the run directory.
    """
    _check_wandb(wandb_mode)
    run_dir = run_store.new_run_dir(root or runs_root(), cfg.task, name)
    cmd = build_command(cfg, run_dir, name, wandb_mode)
    launched = time.time()
    pid, via = spawn(cmd, run_dir / "process.log", run_dir / "metrics.jsonl")
    run_store.atomic_write_json(
        run_dir / "launch.json",
        {"pid": pid, "command": cmd, "launched": launched, "task": cfg.task, "name": name or run_dir.name, "via": via},
    )
    return run_dir


def launch_population(
    cfg: Config,
    axes: Mapping[str, Sequence[str]],
    name: str | None = None,
    wandb_mode: str = "auto",
    root: Path | None = None,
) -> Path:
    """Start a population (one process training every combination of `axes`); returns its launch directory.

    The CLI creates the members' run directories itself, so the page gets a launch directory
    (launch.json with "population", process.log) that stands for the population until its
    members appear; `state.population_members` finds them by pid.
    """
    _check_wandb(wandb_mode)
    root = root or runs_root()
    launch_dir = run_store.new_run_dir(root, cfg.task, f"{name or cfg.task}-launch")
    cmd = build_command(cfg, None, name, wandb_mode, population=axes, runs_root=root)
    launched = time.time()
    pid, via = spawn(cmd, launch_dir / "process.log")
    size = 1
    for values in axes.values():
        size *= len(values)
    run_store.atomic_write_json(
        launch_dir / "launch.json",
        {
            "pid": pid,
            "command": cmd,
            "launched": launched,
            "task": cfg.task,
            "name": name or f"{cfg.task} population",
            "via": via,
            "population": {k: list(v) for k, v in axes.items()},
            "members": size,
        },
    )
    return launch_dir


def has_checkpoint(run_dir: Path) -> bool:
    """Whether the run has a complete checkpoint (Orbax renames a finished save to its step number)."""
    ckpt = Path(run_dir) / "ckpt"
    return ckpt.is_dir() and any(p.name.isdigit() for p in ckpt.iterdir())


def resume(run_dir: Path) -> int:
    """Continue a stopped or crashed run from its latest checkpoint in a new process; returns its pid.

    `python -m training resume <run_dir>` keeps the run's W&B mode and TensorBoard choice. Its
    output is appended to process.log; launch.json records the launch under "resume" so the page
    shows the run as starting until the process takes over status.json.
    """
    run_dir = Path(run_dir)
    cmd = [sys.executable, "-m", "training", "resume", str(run_dir), "--quiet"]
    launched = time.time()
    pid, via = spawn(cmd, run_dir / "process.log", run_dir / "metrics.jsonl")
    info = launch_info(run_dir)
    info["resume"] = {"pid": pid, "command": cmd, "launched": launched, "via": via}
    run_store.atomic_write_json(run_dir / "launch.json", info)
    return pid


def launch_info(run_dir: Path) -> dict[str, Any]:
    """launch.json of a run started from the page ({} for CLI runs)."""
    return run_store.read_json(Path(run_dir) / "launch.json", {}) or {}


def stop(run_dir: Path) -> bool:
    """Ask a run to stop cleanly: the stop file plus SIGTERM (the run finishes its chunk, state "stopped").

    A population member stops its whole population (one process). Returns True if a live
    process was signalled.
    """
    run_dir = Path(run_dir)
    run_store.request_stop(run_dir)
    info = launch_info(run_dir)
    pids = [run_store.read_status(run_dir).get("pid"), (info.get("resume") or {}).get("pid"), info.get("pid")]
    pid = next((p for p in pids if run_store.pid_alive(p)), None)
    if pid is None:
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


_TENSORBOARDS: list[TensorBoard] = []


def close_tensorboards() -> None:
    """Terminate every TensorBoard this process started (at exit, and in tests)."""
    while _TENSORBOARDS:
        tb = _TENSORBOARDS.pop()
        tb.close()
        try:
            tb.proc.wait(10)
        except subprocess.TimeoutExpired:
            tb.proc.kill()


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
                if not _TENSORBOARDS:
                    atexit.register(close_tensorboards)  # TensorBoard lives as long as the dashboard server
                _TENSORBOARDS.append(tb)
                return tb
        except OSError:
            time.sleep(0.3)
    proc.terminate()
    raise RuntimeError(f"TensorBoard did not answer on {url} within {wait_s:.0f} s.")
