"""The run folder's contract as an abstract interface: one method per operation, as Optuna's `BaseStorage`.

`runstore.run_folder.RunFolder` implements it over a local folder; a second backend implements the same
methods and passes the same suite (tests/test_run_folder_contract.py). Each method says what it raises,
what is atomic, and what a reader may assume.

Writers: one process owns a run (its training process, or a client script's writer): only it writes the
config, status, records, summary and final metrics. Anyone may ask it to stop. Within that process the
methods are thread safe (status merges are serialized; every replace is atomic; each append is one write).
Readers: any number of processes, at any time, without locks. A reader never sees half a JSON file, and a
records reader never parses half a line. Persistence: each write is fsync'd before it returns (except the
stop flag); a kill loses at most the write in progress.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping
from typing import Any


class RunStorage(abc.ABC):
    """One run's storage: its config, status, records, summary, final metrics and stop flag."""

    # -- config ---------------------------------------------------------------------------------------
    @abc.abstractmethod
    def write_config(
        self, task: str, config: Mapping[str, Any], name: str | None = None, command: list[str] | None = None,
        **extra: Any,
    ) -> None:  # fmt: skip
        """Write the run's config once, at its start: {"run_id", "name", "task", "config", "created", "command",
        **extra}. Atomic. Raises OSError naming the file (a full disk), `UnsafePath` for a planted link."""

    @abc.abstractmethod
    def replace_config(self, doc: dict[str, Any]) -> None:
        """Replace the whole config document by `doc`. Atomic: a reader sees the old or the new one.
        Raises as `write_config`."""

    @abc.abstractmethod
    def merge_config(self, **fields: Any) -> None:
        """Set top-level fields of the config, keeping the others (a client's changed config, its metric
        definitions). Atomic; the run's writer only (a read-modify-write: two writers would lose one's fields).
        A missing or damaged config starts from {}. Raises as `write_config`."""

    @abc.abstractmethod
    def config(self, default: Any = None) -> Any:
        """The config as written, `default` when missing or unreadable. Never raises."""

    @abc.abstractmethod
    def checked_config(self) -> dict[str, Any] | None:
        """The config as an object, None when missing. Raises `DamagedRunFile` (naming the file and what is
        wrong) when it is unreadable, truncated or not an object."""

    # -- status ---------------------------------------------------------------------------------------
    @abc.abstractmethod
    def write_status(self, **fields: Any) -> dict[str, Any]:
        """Merge `fields` into the status (and "updated": now) and return it. Atomic; thread safe within the
        process (merges are serialized, none lost). A damaged status is replaced, not merged. Raises OSError."""

    @abc.abstractmethod
    def add_event(self, kind: str, message: str, **extra: Any) -> None:
        """Append {"time", "kind", "message", **extra} to the status's "events" (the newest 50 kept).
        Atomic and thread safe as `write_status`. Raises OSError."""

    @abc.abstractmethod
    def status(self) -> dict[str, Any]:
        """The status, checked: {} when missing; {"state": "damaged", "message": <file: what>} when unusable;
        a "running" run whose process is gone from this machine is "crashed". Never raises."""

    @abc.abstractmethod
    def raw_status(self, default: Any = None) -> Any:
        """The status as written (no checks), `default` when missing or unreadable. Never raises."""

    # -- records --------------------------------------------------------------------------------------
    @abc.abstractmethod
    def append_records(self, records: list[Mapping[str, Any]]) -> None:
        """Append records (one JSON object each; NaN and infinities as "nan", "inf", "-inf"), fsync'd, as one
        write: a failure leaves no half line. The run's writer only. Raises OSError naming the file, and
        `UnsafePath` when the records file is a link, FIFO or other non-regular file."""

    @abc.abstractmethod
    def records(self, offset: int = 0, max_bytes: int | None = None) -> tuple[list[dict[str, Any]], int]:
        """The records from byte `offset` on and the offset after them. A torn last line is left for the next
        call (never parsed half); a line that is not a JSON object is skipped; with `max_bytes`, about that
        much. Missing or not a regular file: ([], offset). Never raises."""

    @abc.abstractmethod
    def replace_records(self, records: list[dict[str, Any]]) -> None:
        """Replace the records by `records`: atomic, a new file (a reader following the old one starts over
        from its beginning). The run's writer only (a resume cutting records past its checkpoint)."""

    # -- summary and final metrics --------------------------------------------------------------------
    @abc.abstractmethod
    def write_summary(self, summary: Mapping[str, Any]) -> None:
        """Replace the run's summary (as W&B keeps it). Atomic. Raises OSError."""

    @abc.abstractmethod
    def write_final_metrics(self, final: dict[str, Any]) -> None:
        """Write the ended run's final metrics, one number a metric. Atomic. Raises OSError."""

    @abc.abstractmethod
    def final_metrics(self) -> dict[str, Any]:
        """The ended run's final metrics, {} when there are none or they are not an object. Never raises."""

    # -- stop -----------------------------------------------------------------------------------------
    @abc.abstractmethod
    def request_stop(self) -> None:
        """Ask the run's process to stop after its current chunk (anyone may). Not fsync'd. Raises OSError."""

    @abc.abstractmethod
    def stop_requested(self) -> bool:
        """Whether a stop was asked for and not yet cleared. Never raises."""

    @abc.abstractmethod
    def clear_stop(self) -> None:
        """Forget a stop request (the process, when it starts or resumes). Never raises for a missing one."""
