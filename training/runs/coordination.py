"""JAX's coordination service (the key-value store `jax.distributed` runs in process 0) under one prefix.

A multi-host job's processes meet there: a client script's runs (`jaxdash.multihost`, keys "jaxdash/<n>/")
and the engine's jobs (`training.runs.job_watch`, keys "jaxdash-engine/") share the run's id, its Stop and
their heartbeats (`training.runs.host_watch`) through it, as Orbax's multi-process checkpoints use it. No
JAX import here: the caller hands in the service's client.
"""

from __future__ import annotations

from typing import Any


class Coordination:
    """JAX's coordination-service client, its keys under one run's prefix."""

    def __init__(self, client: Any, prefix: str) -> None:
        self._client, self.prefix = client, prefix

    def set(self, key: str, value: str) -> None:
        """Put `value` under `key` (replacing any)."""
        self._client.key_value_set(self.prefix + key, value, allow_overwrite=True)

    def get(self, key: str, timeout_s: float) -> str | None:
        """The value of `key`, waiting up to `timeout_s` for it; None if it did not come."""
        try:
            return self._client.blocking_key_value_get(self.prefix + key, max(1, int(timeout_s * 1000)))
        except Exception as exc:
            if "DEADLINE_EXCEEDED" in str(exc):
                return None
            raise

    def try_get(self, key: str) -> str | None:
        """The value of `key`, or None if there is none yet."""
        try:
            return self._client.key_value_try_get(self.prefix + key)
        except Exception as exc:
            if "NOT_FOUND" in str(exc):
                return None
            raise

    def dir_get(self, key: str) -> list[tuple[str, str]]:
        """Every (key, value) under `key`."""
        return list(self._client.key_value_dir_get(self.prefix + key))

    def increment(self, key: str) -> int:
        """Add one to the counter `key`; its new value."""
        return int(self._client.key_value_increment(self.prefix + key, 1))

    def delete(self, key: str) -> None:
        """Remove `key` and every key under it."""
        self._client.key_value_delete(self.prefix + key)
