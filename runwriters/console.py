"""Console backend: a tqdm progress bar on stderr and the final metrics at the end.

On a terminal the bar redraws in place; when stderr is not a terminal (a log
file, the dashboard's subprocess pipe) tqdm would write one line per update, so
there we print a plain line at most every `log_interval` seconds instead.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Mapping
from typing import IO

from runwriters.base import MetricWriter, Progress

# Scalars shown in the bar, in this order, when present.
_POSTFIX = ("train/loss", "train/acc", "test/acc", "test/loss", "regression/weight", "regression/bias")


class ConsoleWriter(MetricWriter):
    """Progress bar per chunk with loss/accuracy, final metrics printed at close.

    Args:
      total_steps: steps of the whole run (0 = unknown until the first progress).
      stream: where to write (stderr by default, so stdout stays machine-readable).
      log_interval: seconds between plain lines when `stream` is not a terminal.
      initial_step: where a resumed run starts.
    """

    def __init__(
        self, total_steps: int = 0, stream: IO[str] | None = None, log_interval: float = 10.0, initial_step: int = 0
    ):
        self.stream = stream or sys.stderr
        self.total = total_steps or None
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.log_interval = log_interval
        self._bar = None
        self._last_line = 0.0
        self._step = int(initial_step)
        self._final: dict[str, float] = {}

    def _ensure_bar(self) -> None:
        if self._bar is None and self.tty:
            from tqdm import tqdm

            self._bar = tqdm(
                total=self.total, initial=self._step, unit="step", file=self.stream, dynamic_ncols=True, leave=True
            )

    def write_scalars(self, step: int, scalars: Mapping[str, float], progress: Progress | None = None) -> None:
        """Advance the bar to `step` and show the chunk's main metrics."""
        if progress is not None and progress.total_steps:
            self.total = progress.total_steps
        post = {
            k.split("/")[-1] if k.startswith("train/") else k: f"{float(scalars[k]):.4g}"
            for k in _POSTFIX
            if k in scalars
        }
        if progress is not None and progress.epoch:
            post["epoch"] = f"{progress.epoch}/{progress.total_epochs}"
        if self.tty:
            self._ensure_bar()
            assert self._bar is not None
            if self.total and self._bar.total != self.total:
                self._bar.total = self.total
            self._bar.update(max(0, int(step) - self._step))
            self._bar.set_postfix(post, refresh=False)
        else:
            now = time.monotonic()
            if now - self._last_line >= self.log_interval or (self.total and step >= self.total):
                self._last_line = now
                total = f"/{self.total}" if self.total else ""
                items = " ".join(f"{k}={v}" for k, v in post.items())
                print(f"step {step}{total} {items}", file=self.stream, flush=True)
        self._step = max(self._step, int(step))

    def write_summary(self, metrics: Mapping[str, float]) -> None:
        """Remember the final metrics (added to those given before); printed at close, after the bar is gone."""
        self._final.update({str(k): float(v) for k, v in metrics.items()})

    def flush(self) -> None:
        """Redraw the bar (postfix updates were deferred to once per chunk)."""
        if self._bar is not None:
            self._bar.refresh()

    def close(self, state: str = "finished", message: str | None = None) -> None:
        """Close the bar and print the outcome and final metrics."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None
        print(f"run {state}" + (f": {message}" if message else ""), file=self.stream)
        for k, v in sorted(self._final.items()):
            print(f"  {k:<24s} {v:.6g}", file=self.stream)
        self.stream.flush()
