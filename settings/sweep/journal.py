"""Optuna's journal storage with the heartbeats it lacks, so a dead worker's trial is failed and re-queued there too.

Optuna's RDB storages record heartbeats in their own table; its journal storage (a file on a
shared filesystem) has none, so a trial whose worker was killed stayed RUNNING for ever. Here a
heartbeat is a trial system attribute holding the worker's wall-clock time; a RUNNING trial whose
last beat is older than the grace period is stale, and `optuna.storages.fail_stale_trials` fails it
and runs the retry callback exactly as for an RDB storage. The machines' clocks must agree to
within the grace period (NTP does that).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import optuna
from optuna.storages._heartbeat import BaseHeartbeat
from optuna.trial import FrozenTrial, TrialState

BEAT = "jaxdash:heartbeat"  # the system attribute of a trial's last heartbeat (unix time)


class HeartbeatJournalStorage(optuna.storages.JournalStorage, BaseHeartbeat):
    """`JournalStorage` plus Optuna's heartbeat protocol (record, find stale trials, their callback)."""

    def __init__(
        self,
        backend: optuna.storages.journal.BaseJournalBackend,
        heartbeat_interval: int,
        grace_period: int,
        stale_trial_callback: Callable[[optuna.Study, FrozenTrial], None] | None = None,
    ):
        super().__init__(backend)
        self.heartbeat_interval = heartbeat_interval
        self.grace_period = grace_period
        self.stale_trial_callback = stale_trial_callback

    def record_heartbeat(self, trial_id: int) -> None:
        try:
            self.set_trial_system_attr(trial_id, BEAT, time.time())
        except optuna.exceptions.UpdateFinishedTrialError:
            pass  # told meanwhile: a finished trial needs no more beats

    def _get_stale_trial_ids(self, study_id: int) -> list[int]:
        now = time.time()
        running = self.get_all_trials(study_id, deepcopy=False, states=(TrialState.RUNNING,))
        # A trial whose worker died before its first beat counts from its start.
        last = {
            t._trial_id: t.system_attrs.get(BEAT, t.datetime_start.timestamp()) for t in running if t.datetime_start
        }
        return [trial_id for trial_id, beat in last.items() if now - beat > self.grace_period]

    def get_heartbeat_interval(self) -> int:
        return self.heartbeat_interval

    def get_heartbeat_stale_trial_callback(self) -> Callable[[optuna.Study, FrozenTrial], None] | None:
        return self.stale_trial_callback
