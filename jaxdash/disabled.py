"""`init(mode="disabled")`: a run whose calls do nothing, as W&B's disabled mode (for tests and dry runs).

Nothing is written anywhere; `config` and `summary` still hold what the script sets, `log` counts
steps, every other attribute is a no-op callable, so a script runs unchanged.
"""

from __future__ import annotations

import secrets
import shutil
import tempfile
import weakref
from typing import Any

from jaxdash.client_files import RunPath
from jaxdash.wandb_config import Config
from jaxdash.wandb_summary import Summary


class DisabledRun:
    """A no-op run with W&B's attributes."""

    disabled = True
    offline = False
    url = None

    def __init__(self, config: Any, name: str | None = None, project: str | None = None) -> None:
        self.id = secrets.token_hex(4)
        self.name = name or "dummy-" + self.id
        self.project, self.entity, self.group, self.job_type, self.notes = project or "", "", "", "", None
        self.tags: tuple[str, ...] = ()
        # wandb.save/alert and files a script writes under run.dir land in a temporary folder, removed at finish
        # (or when the run is collected, or at exit): a disabled run leaves nothing behind.
        self.dir = RunPath(tempfile.mkdtemp(prefix="jaxdash-disabled-"))
        self._remove_dir = weakref.finalize(self, shutil.rmtree, str(self.dir), True)
        self.config = Config(config)
        self.summary = Summary(dict, lambda: None)
        self.resumed = False
        self._step = 0
        self._finished = False

    @property
    def step(self) -> int:
        """Steps committed so far."""
        return self._step

    @property
    def finished(self) -> bool:
        """True once `finish` ran."""
        return self._finished

    def log(self, data: Any, step: int | None = None, commit: bool | None = None, **kwargs: Any) -> None:
        """Counts the step; stores nothing."""
        if step is not None and isinstance(step, int) and step > self._step:
            self._step = step
        if commit or (commit is None and step is None):
            self._step += 1

    def finish(self, exit_code: int | None = None, quiet: bool | None = None) -> None:
        """Ends nothing (there is nothing to end) but removes the run's temporary folder."""
        self._finished = True
        self._remove_dir()

    def should_stop(self) -> bool:
        """Never: nothing can ask a disabled run to stop."""
        return False

    def __enter__(self) -> DisabledRun:
        return self

    def __exit__(self, *exc: Any) -> bool:
        self.finish()
        return False

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return _noop


def _noop(*args: Any, **kwargs: Any) -> None:
    return None
