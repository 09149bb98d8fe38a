"""What a client run keeps besides its rows: config.json's config and metric definitions, summary.json,
status.json events, TensorBoard hparams and the W&B config (through the writers), and the run attributes
W&B scripts read (`run.url`, `run.path`, ...). A failed write here warns; it never stops the script."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from jaxdash.row_parts import numeric_kind
from runstore.run_folder import RunFolder

logger = logging.getLogger("jaxdash")
_WARNED: set[str] = set()


class RunPath(str):
    """`run.dir`: a str as W&B's (`run.dir + "/model.pt"` works) that is also a Path (`run.dir / "x"`,
    `.name`, `.exists()`, ...)."""

    def __truediv__(self, other: str) -> Path:
        return Path(self) / other

    def __fspath__(self) -> str:
        return str(self)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(Path(self), name)


class RunFiles:
    """Mixed into `Run`: the run folder's files other than metrics.jsonl."""

    dir: Path
    id: str
    project: str
    entity: str
    _lock: Any
    _writer: Any
    _finished: bool
    _hparams_sent: bool
    _summary_dirty: bool

    def _send_hparams(self) -> None:
        """The config to TensorBoard's HParams and the W&B copy: at the first `log` (so the usual
        `wandb.config.update(args)` right after `init` is in the HParams row), later on each change."""
        self._hparams_sent = True
        try:
            with self._lock:
                self._writer.write_hparams(self.config.as_dict())
        except Exception as exc:  # noqa: BLE001 - TensorBoard/W&B are best-effort
            logger.warning("jaxdash: the config could not be handed to TensorBoard/W&B (%s)", exc)

    def _config_changed(self, data: dict[str, Any]) -> None:
        """A config change after `init`: config.json now, TensorBoard and W&B once they have the config."""
        self._persist("config", self.config.as_dict())
        if self._hparams_sent and not self._finished:
            self._send_hparams()

    def _persist(self, field: str, value: Any) -> None:
        try:
            RunFolder(self.dir).merge_config(**{field: value})
        except (OSError, TypeError, ValueError) as exc:
            logger.warning("jaxdash: %s could not be written to %s (%s)", field, RunFolder(self.dir).config_path, exc)

    def _summary_changed(self) -> None:
        self._summary_dirty = True
        if self._finished:
            self._write_summary(self.summary.as_dict())

    def _write_summary(self, summary: Mapping[str, Any]) -> None:
        self._summary_dirty = False
        try:
            RunFolder(self.dir).write_summary(summary)
        except (OSError, TypeError, ValueError) as exc:
            logger.warning("jaxdash: summary.json of %s could not be written (%s)", self.id, exc)

    def _event(self, kind: str, message: str) -> None:
        logger.warning("jaxdash: %s", message)
        try:
            RunFolder(self.dir).add_event(kind, message)
        except OSError:
            pass

    # -- W&B's run attributes and calls ------------------------------------------------------------
    @property
    def url(self) -> str | None:
        """The W&B copy's URL when it logs online, else None (as an offline W&B run)."""
        wandb = RunFolder(self.dir).status().get("wandb")
        return wandb.get("url") if isinstance(wandb, dict) else None

    @property
    def path(self) -> str:
        """W&B's "entity/project/id"."""
        return "/".join(p for p in (self.entity, self.project, self.id) if p)

    @property
    def offline(self) -> bool:
        """True unless the W&B copy logs online."""
        return self.url is None

    @property
    def disabled(self) -> bool:
        """False: a disabled run is `jaxdash.disabled.DisabledRun`."""
        return False

    def mark_preempting(self) -> None:
        """W&B's: the run may be preempted. Recorded as an event on the run's page."""
        self._event("preempting", "the script said the run may be preempted (run.mark_preempting)")

    def watch(self, *args: Any, **kwargs: Any) -> None:
        """W&B's `watch` (PyTorch gradients): nothing to hook in JAX; log `jax.tree` leaves yourself."""
        from jaxdash.notices import notice

        notice("watch", "watch() hooks PyTorch modules; with JAX, log the arrays you want (e.g. params) instead")

    def unwatch(self, *args: Any, **kwargs: Any) -> None:
        """W&B's `unwatch`: nothing was watched."""

    def log_artifact(self, *args: Any, **kwargs: Any) -> Any:
        """W&B's `run.log_artifact`: kept in the run folder (jaxdash/wandb_artifacts.py)."""
        from jaxdash.wandb_artifacts import log_artifact_to

        return log_artifact_to(self, *args, **kwargs)

    def use_artifact(self, *args: Any, **kwargs: Any) -> Any:
        """W&B's `run.use_artifact`."""
        from jaxdash.wandb_artifacts import use_artifact_in

        return use_artifact_in(self, *args, **kwargs)

    def save(self, *args: Any, **kwargs: Any) -> Any:
        """W&B's `run.save`: the files copied into the run folder's files/ (jaxdash/wandb_artifacts.py)."""
        from jaxdash import wandb_artifacts

        return wandb_artifacts.save(*args, **kwargs)

    def alert(self, *args: Any, **kwargs: Any) -> None:
        """W&B's `run.alert`: recorded in the run folder for the page."""
        from jaxdash import wandb_artifacts

        wandb_artifacts.alert(*args, **kwargs)


def flatten(metrics: Mapping[str, Any], prefix: str = "", sep: str = ".") -> dict[str, Any]:
    """{"a": {"b": x}} -> {"a.b": x} (W&B's history keys; `sep="/"` for `log_chunk`); strings, None and
    other non-numbers are left out (one warning per key)."""
    out: dict[str, Any] = {}
    for key, value in metrics.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(flatten(value, f"{name}{sep}", sep))
        elif isinstance(value, (str, bytes)) or value is None or not _numeric(value):
            if name not in _WARNED:
                _WARNED.add(name)
                kind = type(value).__name__
                logger.warning("jaxdash: %s: %s is no metric (a number or an array); not logged", name, kind)
        else:
            out[name] = value
    return out


def _numeric(value: Any) -> bool:
    """A number, a bool or an array of them (bfloat16, float8 and int4 included), as W&B logs them."""
    if isinstance(value, (int, float)):
        return True
    if isinstance(value, (list, tuple)):  # W&B keeps a list of numbers as it is
        try:
            return numeric_kind(np.asarray(value).dtype) != ""
        except ValueError:  # ragged
            return False
    dtype = getattr(value, "dtype", None)  # NumPy and JAX arrays: no device sync to read the dtype
    return dtype is not None and numeric_kind(dtype) != ""
