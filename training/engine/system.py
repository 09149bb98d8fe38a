"""System metrics of the training process, sampled once per chunk as `sys/*` scalars (as W&B users expect).

sys/cpu_percent: this process's CPU use since the previous sample (100 = one full core);
sys/rss_mb: its resident memory; sys/accel_mem_mb: memory in use on the first accelerator, where
JAX reports it (GPUs and TPUs; the CPU backend reports none).
"""

from __future__ import annotations

import psutil

from runstore import tags


class SystemMetrics:
    """Samples the current process; the first CPU sample covers the time since construction."""

    def __init__(self) -> None:
        self.process = psutil.Process()
        self.process.cpu_percent(None)  # starts psutil's CPU-time window
        self._device = None
        try:
            import jax

            device = jax.local_devices()[0]
            self._device = device if device.memory_stats() else None
        except Exception:  # noqa: BLE001 - no memory stats on this backend
            self._device = None

    def sample(self) -> dict[str, float]:
        """{"sys/cpu_percent", "sys/rss_mb", and "sys/accel_mem_mb" when known}."""
        out = {
            tags.SYS_CPU: float(self.process.cpu_percent(None)),
            tags.SYS_RSS: self.process.memory_info().rss / 2**20,
        }
        if self._device is not None:
            stats = self._device.memory_stats() or {}
            out[tags.SYS_ACCEL_MEM] = stats.get("bytes_in_use", 0) / 2**20
        return out
