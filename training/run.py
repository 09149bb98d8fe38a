"""Run one training job into a run directory: lifecycle, writers, stop requests.

This module owns the lifecycle fields of status.json (state, ended, message,
resumed_from); the run-store writer owns the progress fields. Training functions
only see a writer, a `should_stop` callable and a Checkpointer. `resume` continues
a stopped or crashed run from its latest checkpoint (`python -m training resume DIR`).
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from training import run_store
from training.config import Config, ConfigError, config_from_dict, config_to_dict
from training.errors import CannotResume, TrainingError
from training.result import TrainResult
from training.writers.base import MetricWriter

log = logging.getLogger(__name__)


class StopFlag:
    """True once SIGTERM/SIGINT arrived or the run directory holds a `stop` file."""

    def __init__(self, run_dir: Path):
        self.run_dir = run_dir
        self.signalled = False

    def install(self) -> None:
        for sig in (signal.SIGTERM, signal.SIGINT):
            try:
                signal.signal(sig, self._on_signal)
            except ValueError:  # not the main thread (e.g. in tests); the stop file still works
                pass

    def _on_signal(self, signum: int, frame: object) -> None:
        if self.signalled:  # second Ctrl-C: give up waiting for the chunk
            raise KeyboardInterrupt
        self.signalled = True

    def __call__(self) -> bool:
        return self.signalled or run_store.stop_requested(self.run_dir)


def _train_fn(task: str) -> Callable[..., TrainResult]:
    if task == "regression":
        from training.regression import train_regression

        return train_regression
    from training.mnist import train_mnist

    return train_mnist


def open_writer(
    cfg: Config,
    run_dir: Path,
    name: str | None,
    wandb_mode: str,
    tensorboard: bool,
    console: bool,
    resume_step: int | None = None,
    group: str | None = None,
) -> MetricWriter:
    """Build the run's writers and publish their info (W&B mode/url, TB logdir) in status.json.

    A resumed run (`resume_step`) continues its TensorBoard run and its W&B run id; hparams are
    only written by a fresh run.
    """
    from training.writers.build import build_writer

    extra: dict[str, Any] = {}  # passed only when set, so build_writer's defaults stay the contract
    if resume_step is not None:
        extra["resume_step"] = resume_step
    if group is not None:
        extra["group"] = group
    writer, info = build_writer(run_dir, cfg, name=name, wandb_mode=wandb_mode, tensorboard=tensorboard, console=console, **extra)
    run_store.write_status(run_dir, **info)
    if resume_step is None:
        writer.write_hparams(config_to_dict(cfg))
    return writer


def close_run(run_dir: Path, writer: MetricWriter, state: str, message: str | None, final: dict[str, float]) -> None:
    """Flush and close the writers with the final state, then record it in status.json."""
    try:
        writer.flush()
    finally:
        writer.close(state, message)
    if final:
        run_store.atomic_write_json(run_dir / "final_metrics.json", final)
    run_store.write_status(run_dir, state=state, message=message, ended=time.time(), final=final)


def failure(exc: BaseException, run_dir: Path) -> tuple[str, str]:
    """(state, message) for an exception that ended a run; unexpected ones keep a traceback in error.log."""
    if isinstance(exc, TrainingError):
        return exc.state, str(exc)
    if isinstance(exc, ConfigError):
        return "failed", str(exc)
    if isinstance(exc, KeyboardInterrupt):
        return "stopped", "Interrupted."
    message = f"{type(exc).__name__}: {exc}"
    (run_dir / "error.log").write_text("".join(traceback.format_exception(exc)))
    log.error("run failed: %s (traceback in %s)", message, run_dir / "error.log")
    return "failed", message


def _run(
    cfg: Config, run_dir: Path, name: str | None, wandb_mode: str, tensorboard: bool, console: bool,
    resume_step: int | None = None,
) -> tuple[str, TrainResult | None]:
    """Writers, stop flag and checkpoints around one training function call."""
    from training.checkpoint import Checkpointer

    (run_dir / "stop").unlink(missing_ok=True)
    stop = StopFlag(run_dir)
    stop.install()
    writer = open_writer(cfg, run_dir, name, wandb_mode, tensorboard, console, resume_step=resume_step)
    result: TrainResult | None = None
    state, message = "failed", None
    ckpt = None
    try:
        ckpt = Checkpointer(run_dir, cfg.ckpt_every, resume_step=resume_step)
        result = _train_fn(cfg.task)(cfg, writer, stop, ckpt)
        state = result.state
        writer.write_summary(result.final)
    except (Exception, KeyboardInterrupt) as exc:  # noqa: BLE001 - record any failure in the run
        state, message = failure(exc, run_dir)
    finally:
        try:
            if ckpt is not None:
                ckpt.close()  # waits for a save in flight
        finally:
            close_run(run_dir, writer, state, message, result.final if result else {})
    return state, result


def execute(
    cfg: Config,
    run_dir: Path,
    name: str | None = None,
    wandb_mode: str = "auto",
    tensorboard: bool = True,
    console: bool = True,
    command: list[str] | None = None,
) -> tuple[str, TrainResult | None]:
    """Train `cfg` into `run_dir` with every configured writer.

    Args:
      cfg: a validated config.
      run_dir: an existing (usually fresh) run directory.
      name: display name of the run.
      wandb_mode: "auto" (online if logged in, else offline), "online", "offline" or "disabled".
      tensorboard: write tensorboardX event files under tb/.
      console: print a progress bar and final metrics.
      command: the command line, saved in config.json.

    Returns:
      (final state, result or None if the run failed before finishing).
    """
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    run_store.write_config(run_dir, cfg.task, config_to_dict(cfg), name=name, command=command)
    run_store.start_status(run_dir, total_steps=cfg.total_steps, epoch=0, total_epochs=getattr(cfg, "epochs", 0))
    return _run(cfg, run_dir, name, wandb_mode, tensorboard, console)


def resume(
    run_dir: str | Path, wandb_mode: str | None = None, tensorboard: bool | None = None, console: bool = True
) -> tuple[str, TrainResult | None]:
    """Continue a stopped, crashed or failed run from its latest checkpoint, in this process.

    metrics.jsonl loses the records past the checkpoint step (they are logged again, identically),
    TensorBoard purges its events past it, and W&B continues the same run id. status.json goes
    back to "running" with "resumed_from": <checkpoint step>.

    Args:
      run_dir: the run directory (as written by `execute` or a population).
      wandb_mode: default: the mode the run was started with.
      tensorboard: default: whether the run has a tb/ folder.
      console: show a progress bar.

    Returns:
      (final state, result), as `execute`.

    Raises:
      CannotResume: not a run, still running, finished, diverged, or without a checkpoint.
    """
    from training.checkpoint import checkpoint_steps, resume_point, truncate_metrics

    run_dir = Path(run_dir)
    doc = run_store.read_json(run_dir / "config.json")
    if not doc:
        raise CannotResume(f"{run_dir} is not a run directory (no config.json).")
    cfg = config_from_dict({**doc["config"], "task": doc["task"]})
    status = run_store.read_status(run_dir)
    state = status.get("state")
    if state in ("running", "finished", "diverged"):
        why = {"running": f"it is still running (pid {status.get('pid')}); stop it first",
               "finished": "it already finished", "diverged": "it diverged and would again; start a new run with a lower --lr"}
        raise CannotResume(f"Cannot resume {run_dir.name}: {why[state]}.")
    step = resume_point(run_dir)
    if step is None:
        found = f"its checkpoints {checkpoint_steps(run_dir)} are all past its last logged step" if checkpoint_steps(run_dir) else "it has no checkpoint"
        raise CannotResume(f"Cannot resume {run_dir.name}: {found} (in {run_dir / 'ckpt'}).")
    truncate_metrics(run_dir, step)
    run_store.write_status(
        run_dir, state="running", pid=os.getpid(), host=socket.gethostname(), ended=None, message=None,
        step=step, resumed_from=step, resumed_at=time.time(), final=None,
    )
    previous = status.get("wandb") or {}
    if wandb_mode is None:
        wandb_mode = "disabled" if previous.get("mode", "disabled") == "disabled" else previous.get("requested_mode", "auto")
    if tensorboard is None:
        tensorboard = (run_dir / "tb").is_dir()
    return _run(cfg, run_dir, doc.get("name"), wandb_mode, tensorboard, console, resume_step=step)
