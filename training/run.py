"""Run one training job into a run directory: lifecycle, writers, stop requests.

This module owns the lifecycle fields of status.json (state, ended, message);
the run-store writer owns the progress fields. Training functions only see a
writer and a `should_stop` callable.
"""

from __future__ import annotations

import logging
import signal
import time
import traceback
from collections.abc import Callable
from pathlib import Path

from training import run_store
from training.config import Config, config_to_dict
from training.errors import TrainingError
from training.result import TrainResult

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
    from training.writers.build import build_writer

    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    run_store.write_config(run_dir, cfg.task, config_to_dict(cfg), name=name, command=command)
    run_store.start_status(
        run_dir, total_steps=cfg.total_steps, epoch=0, total_epochs=getattr(cfg, "epochs", 0),
    )
    (run_dir / "stop").unlink(missing_ok=True)
    stop = StopFlag(run_dir)
    stop.install()
    writer, info = build_writer(run_dir, cfg, name=name, wandb_mode=wandb_mode, tensorboard=tensorboard, console=console)
    run_store.write_status(run_dir, **info)
    result: TrainResult | None = None
    message: str | None = None
    try:
        writer.write_hparams(config_to_dict(cfg))
        result = _train_fn(cfg.task)(cfg, writer, stop)
        state = result.state
        writer.write_summary(result.final)
    except TrainingError as exc:
        state, message = exc.state, str(exc)
    except KeyboardInterrupt:
        state, message = "stopped", "Interrupted."
    except Exception as exc:  # noqa: BLE001 - record any failure in the run, keep the traceback in a file
        state = "failed"
        message = f"{type(exc).__name__}: {exc}"
        (run_dir / "error.log").write_text(traceback.format_exc())
        log.error("run failed: %s (traceback in %s)", message, run_dir / "error.log")
    finally:
        try:
            writer.flush()
        finally:
            writer.close(state if "state" in locals() else "failed", message)
    final = result.final if result else {}
    if final:
        run_store.atomic_write_json(run_dir / "final_metrics.json", final)
    run_store.write_status(run_dir, state=state, message=message, ended=time.time(), final=final)
    return state, result
