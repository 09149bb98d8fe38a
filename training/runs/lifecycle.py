"""A run's lifecycle fields in status.json, its stop requests and how a failure is told to the user.

This module owns the lifecycle fields of status.json (state, ended, message, resumed_from); the
run-store writer owns the progress fields.
"""

from __future__ import annotations

import errno
import logging
import os
import re
import signal
import time
import traceback
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from runstore.env_numbers import EnvNumberError
from runstore.run_folder import RunFolder
from runwriters.base import MetricWriter
from settings.fields import ConfigError
from training.errors import TrainingError

log = logging.getLogger(__name__)


class StopFlag:
    """True once SIGTERM/SIGINT arrived or any of the runs' directories holds a `stop` file."""

    def __init__(self, run_dirs: Sequence[Path]):
        self.run_dirs = [Path(d) for d in run_dirs]
        self.signalled = False

    def install(self) -> None:
        """Catch SIGTERM/SIGINT: the run stops cleanly after its chunk (a second signal is ignored)."""
        for sig in (signal.SIGTERM, signal.SIGINT):
            try:
                signal.signal(sig, self._on_signal)
            except ValueError:  # not the main thread (e.g. in tests); the stop file still works
                pass

    def _on_signal(self, signum: int, frame: object) -> None:
        if self.signalled:
            log.warning("Already stopping: the run ends after its current chunk and its checkpoint.")
        self.signalled = True

    def __call__(self) -> bool:
        return self.signalled or any(RunFolder(d).stop_requested() for d in self.run_dirs)


def describe_os_error(exc: OSError) -> str:
    """One line naming the path and the cause, e.g. "No space left on device writing runs/x/metrics.jsonl"."""
    cause = exc.strerror or type(exc).__name__
    where = f" writing {exc.filename}" if exc.filename else ""
    hint = {
        errno.ENOSPC: " Free some space, then resume the run.",
        errno.EACCES: " Check the folder's permissions.",
        errno.EROFS: " Pick a writable --runs-root.",
    }
    return f"{cause}{where}.{hint.get(exc.errno or 0, '')}"


def full_disk_path(exc: BaseException) -> str | None:
    """The path a full disk failed to write as another library tells it (TensorStore's RESOURCE_EXHAUSTED
    `... at local file "/runs/x/ckpt/200.orbax-checkpoint-tmp/...": No space left on device`): the first
    quoted absolute path, cut to the checkpoint it belongs to; "" when none is named; None when the
    error is no full disk."""
    text = str(exc)
    if os.strerror(errno.ENOSPC) not in text:
        return None
    found = re.search(r'"(/[^"]+)"', text)
    return re.sub(r"\.orbax-checkpoint-tmp.*$", "", found.group(1)) if found else ""


def describe_error(exc: BaseException) -> str:
    """One line for any exception: an OSError's path and cause (or a full disk another library reports),
    else its type and message. Its own path wins over the exception it was raised while handling."""
    if isinstance(exc, OSError):
        return describe_os_error(exc)
    full = full_disk_path(exc)
    if full is not None:
        return describe_os_error(OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), full or None))
    cause = exc.__cause__ or exc.__context__
    if isinstance(cause, OSError):
        return describe_os_error(cause)
    return f"{type(exc).__name__}: {exc}"


def failure(exc: BaseException, run_dir: Path) -> tuple[str, str]:
    """(state, message) for an exception that ended a run; unexpected ones keep a traceback in error.log."""
    if isinstance(exc, TrainingError):
        return exc.state, str(exc)
    if isinstance(exc, (ConfigError, EnvNumberError)):  # a bad setting: its one line says which and the fix
        return "failed", str(exc)
    if isinstance(exc, KeyboardInterrupt):
        return "stopped", "Interrupted."
    if isinstance(exc, OSError):
        return "failed", describe_os_error(exc)
    if os.strerror(errno.ENOSPC) in str(exc):  # e.g. Orbax/TensorStore's "RESOURCE_EXHAUSTED: ... No space left"
        return "failed", describe_os_error(
            OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(RunFolder(run_dir).checkpoints))
        )
    if isinstance(exc, MemoryError) or "RESOURCE_EXHAUSTED" in str(exc):
        return "failed", (
            "Out of memory: the model or data do not fit. Use fewer points, smaller layers or a smaller batch."
        )
    message = f"{type(exc).__name__}: {exc}"
    try:
        (run_dir / "error.log").write_text("".join(traceback.format_exception(exc)))
        log.error("run failed: %s (traceback in %s)", message, run_dir / "error.log")
    except OSError:
        log.error("run failed: %s", message)
    return "failed", message


def close_run(run_dir: Path, writer: MetricWriter, state: str, message: str | None, final: Mapping[str, float],
              fields: Mapping[str, Any] | None = None) -> None:  # fmt: skip
    """Flush and close the writers with the final state, then record it in status.json in one write, with the
    final numbers and the other `fields` of the end: `final_basis`, which final numbers are no last value
    (e.g. "epoch mean"; the page labels them so), and `devices`, what a job trained on.

    A run store that cannot be written turns a finished run into a failed one with that message.
    """
    try:
        writer.flush()
    except OSError as exc:
        state, message = "failed", describe_os_error(exc)
    finally:
        try:
            writer.close(state, message)
        except OSError as exc:
            state, message = "failed", describe_os_error(exc)
    try:
        if final:
            RunFolder(run_dir).write_final_metrics(dict(final))
        ended = {"state": state, "message": message, "ended": time.time(), "final": dict(final) or None}
        RunFolder(run_dir).write_status(**ended, **{k: v for k, v in (fields or {}).items() if v})
    except OSError as exc:
        log.error("%s: could not record the end of the run: %s", run_dir, describe_os_error(exc))
