"""System metrics of a client script's own process, as W&B's system monitor samples them: every 15 s (W&B's
`x_stats_sampling_interval`, also read from $WANDB_X_STATS_SAMPLING_INTERVAL), off with W&B's `x_disable_stats`
($WANDB_X_DISABLE_STATS).

Each sample is the engine's `sys/*` (`runstore.tags`: CPU percent since the previous sample, 100 = one core;
resident memory in MB; device memory where JAX reports it, never starting JAX's backend itself) plus the
process's thread count, written to the run folder only (metrics.jsonl, at the run's latest step) by
`RowsOut.write_system`: the page's System grid reads them there; TensorBoard, the summary and the W&B history
get none (the W&B copy's own monitor samples this same process: `jaxdash.session` gives it this pid). One
more sample is taken when the run ends, so a run shorter than the interval has one too.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from collections.abc import Callable
from typing import Any

from jaxdash.init_settings import explicit
from runstore import tags
from runstore.env_numbers import env_number_or_default
from training.runs.host_watch import Sampler

logger = logging.getLogger("jaxdash")
SAMPLE_S = 15.0  # W&B's default x_stats_sampling_interval


def interval(settings: Any) -> float | None:
    """Seconds between samples (W&B's x_stats_sampling_interval), None when W&B's x_disable_stats says off."""
    off = explicit(settings, "x_disable_stats")
    if off is None:
        off = os.environ.get("WANDB_X_DISABLE_STATS", "").strip().lower() in ("1", "true", "yes", "on")
    if off:
        return None
    given = explicit(settings, "x_stats_sampling_interval")
    if isinstance(given, (int, float)) and not isinstance(given, bool) and given > 0:
        return float(given)
    return env_number_or_default("WANDB_X_STATS_SAMPLING_INTERVAL", SAMPLE_S, positive=True)


class ProcessSampler(Sampler):
    """The engine's system metrics of this process, and its thread count."""

    def _accelerator(self) -> Any:
        """The device whose memory JAX reports, once the script's JAX has started its backend: never imports
        JAX itself (a script that uses none stays without it; an import here, beside the script's own, left
        the script a half-initialized `jax` module)."""
        bridge = sys.modules.get("jax._src.xla_bridge")
        started = getattr(bridge, "backends_are_initialized", None)
        if not callable(started) or not started():
            return None
        return super()._accelerator()

    def sample(self) -> dict[str, float]:
        """{"sys/cpu_percent", "sys/rss_mb", "sys/threads", and "sys/accel_mem_mb" where JAX reports it}."""
        out = {f"{tags.SYS}/{k}": v for k, v in super().sample().items()}
        out[tags.SYS_THREADS] = float(self._process.num_threads())
        return out


class SystemWatch:
    """Samples this process every `every` seconds on a thread of its own and hands each sample to `write`."""

    def __init__(self, write: Callable[[dict[str, float]], None], every: float) -> None:
        self._write, self._every = write, every
        self._sampler = ProcessSampler()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="jaxdash-system", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._done.wait(self._every):
            self._sample()

    def _sample(self) -> None:
        try:
            self._write(self._sampler.sample())
        except Exception as exc:  # noqa: BLE001 - a failed sample never stops the run
            logger.debug("jaxdash: system metrics not sampled (%s)", exc)

    def close(self) -> None:
        """Stop sampling; one last sample (the run's end)."""
        if self._done.is_set():
            return
        self._done.set()
        self._thread.join(timeout=5)
        self._sample()
