"""A population member's own lines for its W&B Logs tab.

One process trains every member, so its console output is one stream: captured by each member's
W&B run it would show member 0's progress under every member, starting wherever that member's
`wandb.init` happened to end. A member's run captures no console instead, and this writes the lines
a progress bar would print for that member alone (its steps, loss and accuracy every 10 s, its
outcome and final metrics) with W&B's `run.write_logs`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from runwriters.base import Progress
from runwriters.console import ConsoleWriter


class MemberLog:
    """A text stream into a W&B run's Logs tab, fed by a ConsoleWriter of its own.

    Lines written before the run exists (its init runs in the background) wait for `attach`.
    """

    def __init__(self, initial_step: int = 0, log_interval: float = 10.0):
        self._run: Any = None
        self._partial = ""
        self._waiting: list[str] = []
        self.console = ConsoleWriter(stream=self, log_interval=log_interval, initial_step=initial_step)

    def attach(self, run: Any) -> None:
        """Send the lines kept so far to `run`, and every later line as it comes."""
        self._run = run
        for line in self._waiting:
            run.write_logs(line)
        self._waiting = []

    # -- the stream ConsoleWriter prints to ---------------------------------------------------
    def write(self, text: str) -> int:
        """Whole lines go to the Logs tab (`print` writes a line and its newline in two calls)."""
        *lines, self._partial = (self._partial + text).split("\n")
        for line in lines:
            if self._run is not None:
                self._run.write_logs(line)
            else:
                self._waiting.append(line)
        return len(text)

    def flush(self) -> None:
        """Nothing kept back but an unfinished line."""

    def isatty(self) -> bool:
        return False  # plain lines, never a redrawn bar

    # -- what the W&B writer forwards ---------------------------------------------------------
    def scalars(self, step: int, scalars: Mapping[str, float], progress: Progress | None) -> None:
        self.console.write_scalars(step, scalars, progress)

    def summary(self, metrics: Mapping[str, float]) -> None:
        self.console.write_summary(metrics)

    def close(self, state: str, message: str | None) -> None:
        self.console.close(state, message)
