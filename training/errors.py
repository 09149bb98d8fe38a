"""Errors that end a run with a message for the user rather than a traceback."""

from __future__ import annotations


class TrainingError(RuntimeError):
    """A run ended for a reason the user can act on; `str(err)` says what to do."""

    state = "failed"


class Diverged(TrainingError):
    """The loss became NaN or infinite."""

    state = "diverged"

    def __init__(self, step: int, value: float, lr: float):
        self.step = step
        # A tenth of a sane rate; for an absurd one (say 1e308) a tenth is still absurd: suggest a usual one.
        hint = f"--lr {lr / 10:g}" if 0 < lr <= 10 else "--lr 0.001, a usual starting point"
        super().__init__(
            f"Loss became {value} at step {step}: training diverged. Try a lower learning rate (e.g. {hint})."
        )


class DataUnavailable(TrainingError):
    """A dataset could not be found locally nor downloaded."""


class CannotResume(TrainingError):
    """A run directory cannot be resumed (finished, still running, diverged, or no checkpoint)."""
