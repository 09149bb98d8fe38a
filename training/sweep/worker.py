"""The worker loop: pull trials from a study's storage until its budget is done, on any machine.

    python -m training worker --sweep NAME --storage sqlite:////shared/runs/sweeps.db --runs-root /shared/runs

Several workers may share one storage. Each claims trials with `study.ask` (Optuna hands a
re-queued WAITING trial out first), beats their heartbeats while they train, and tells the
outcome. A worker killed mid-trial stops beating; after the grace period the next worker that
looks fails that trial and RetryHeartbeatStaleTrialCallback re-queues a copy (system attr
`failed_trial` names the original), so no finished trial is lost and none runs twice unknowingly.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import optuna
from optuna.trial import TrialState

from runstore import safe_files
from settings.fields import ConfigError
from settings.population import MAX_MEMBERS
from settings.sweep import server
from settings.sweep import study as studies
from training.sweep.trials import programs, run_batch, shares_program

IDLE_S = 0.5  # while other workers' trials run, look again this often (one may die; the last one to end ends the sweep)


def _spent(t: optuna.trial.FrozenTrial) -> bool:
    """A trial that used up a slot of the budget: any but one failed by a dead worker or asked past it.

    A trial that trained and failed (e.g. diverged) counts, so a bad setting is not retried forever;
    a dead worker's trial does not: its re-queued copy takes its slot.
    """
    return t.state != TrialState.FAIL or "run_state" in t.user_attrs


def _counts(study: optuna.Study) -> dict[TrialState, int]:
    counts = dict.fromkeys(TrialState, 0)
    for t in study.get_trials(deepcopy=False):
        counts[t.state] += 1
    counts[TrialState.COMPLETE] += sum(  # trained and failed: done, as far as the budget goes
        1 for t in study.get_trials(deepcopy=False, states=(TrialState.FAIL,)) if _spent(t)
    )
    return counts


@contextlib.contextmanager
def claim_lock(url: str, storage: optuna.storages.BaseStorage | None = None) -> Iterator[None]:
    """Workers sharing a storage claim one at a time, so a program's trials stay together.

    Without it two workers asking at once each took some of one program's grid points, and a
    population of three trained as three runs. A file lock next to a SQLite or journal storage
    (the workers of one machine, or of a shared filesystem that has locks); a PostgreSQL advisory
    lock on the server that holds `storage` (workers on any machine; released if a worker dies).
    """
    target = studies.storage_file(url)
    if target is None:
        with server.advisory_lock(storage):
            yield
        return
    with os.fdopen(safe_files.open_append(target + ".claim-lock"), "a") as lock:  # never through a link
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _claim(study: optuna.Study, k: int) -> list[optuna.Trial]:
    """Up to `k` new trials within the budget; a trial asked past it (a race between workers) is failed.

    A grid's points wait in program order (study.enqueue_grid); the claim ends before a point of
    another program, so K claimed trials are one program's members (under claim_lock, not split
    between workers).
    """
    budget = study.user_attrs["trials"]
    claimed = []
    space = studies.space_of(study)
    for _ in range(k):
        trial = study.ask(space)  # a re-queued trial keeps its own params; a new one samples the space
        _beat_now(study, trial._trial_id)  # a worker killed before its heartbeat thread's first beat still goes stale
        live = [t for t in study.get_trials(deepcopy=False) if _spent(t)]
        rank = sorted(t.number for t in live).index(trial.number)
        if rank >= budget:
            trial.set_user_attr("surplus", True)  # another worker claimed the last slot first
            study.tell(trial, state=TrialState.FAIL)
            break
        claimed.append(trial)
        if not _next_joins(study, claimed[0]):
            break
    return claimed


def _next_joins(study: optuna.Study, first: optuna.Trial) -> bool:
    """Whether the next waiting grid point differs from `first` only in lr/seed (random/tpe: always)."""
    waiting = study.get_trials(deepcopy=False, states=(TrialState.WAITING,))
    if not waiting:
        return study.user_attrs["method"] != "grid"
    nxt = min(waiting, key=lambda t: t.number)
    return _same_program(first.params, nxt.system_attrs.get("fixed_params", nxt.params))


def _same_program(a: dict, b: dict) -> bool:
    from settings.population import VARIED

    return {k: str(v) for k, v in a.items() if k not in VARIED} == {k: str(v) for k, v in b.items() if k not in VARIED}


class Heartbeat(threading.Thread):
    """Records a heartbeat for every trial this worker claimed and has not told yet."""

    def __init__(self, study: optuna.Study):
        super().__init__(daemon=True)  # dies with the worker: its trials then go stale, as they should
        self.study, self.pending = study, set()

    def run(self) -> None:
        storage = self.study._storage
        if not isinstance(storage, optuna.storages._heartbeat.BaseHeartbeat):
            return
        while True:
            for trial_id in list(self.pending):
                # A blip of the server: beat again next time (pre-ping reconnects). A long outage ends the
                # worker at its next storage call, and its trials go stale as a dead worker's do.
                with contextlib.suppress(*server.STORAGE_ERRORS):
                    storage.record_heartbeat(trial_id)
            time.sleep(studies.HEARTBEAT_S)


def _beat_now(study: optuna.Study, trial_id: int) -> None:
    """The first heartbeat of a trial, at once: a trial that never beat is never found stale."""
    if isinstance(study._storage, optuna.storages._heartbeat.BaseHeartbeat):
        study._storage.record_heartbeat(trial_id)


def _stale(study: optuna.Study) -> None:
    if isinstance(study._storage, optuna.storages._heartbeat.BaseHeartbeat):
        optuna.storages.fail_stale_trials(study)


def run_worker(
    name: str, url: str, root: Path, max_parallel: int = 1, wandb_mode: str = "disabled", console: bool = False
) -> list[str]:
    """Train trials of study `name` until its budget is finished; the states of the trials this worker ran."""
    studies.existing(url)
    study = studies.load(name, url)
    space = study.user_attrs["space"]
    # Random/TPE trials that change shapes each need their own program: claim one at a time.
    batch = min(max_parallel, MAX_MEMBERS) if shares_program(space) or study.user_attrs["method"] == "grid" else 1
    beat = Heartbeat(study)
    beat.start()
    try:
        return _work(study, url, batch, beat, lambda group: run_batch(study, group, root, wandb_mode, console))
    except server.STORAGE_ERRORS as exc:  # the server went away mid-sweep: one line, never a traceback
        raise ConfigError({"storage": server.lost_error(url, exc)}) from None


def _work(
    study: optuna.Study, url: str, batch: int, beat: Heartbeat, train: Callable[[list[optuna.Trial]], list[str]]
) -> list[str]:
    """The worker's loop: fail stale trials, claim, `train` (one program's trials, into runs: their states),
    tell, until the budget is met."""
    budget = study.user_attrs["trials"]
    ran: list[str] = []
    while True:
        _stale(study)
        counts = _counts(study)
        done = counts[TrialState.COMPLETE] + counts[TrialState.PRUNED]
        open_ = budget - done - counts[TrialState.RUNNING]
        if done >= budget or counts[TrialState.FAIL] > budget * (studies.MAX_RETRY + 1):
            return ran  # the budget is met, or trials keep failing (their runs' status.json say why)
        if open_ <= 0 and not counts[TrialState.WAITING]:
            time.sleep(IDLE_S)  # others are training the rest; stay to re-run any of theirs that dies
            continue
        with claim_lock(url, study._storage):
            claimed = _claim(study, max(1, min(batch, open_)))
        beat.pending.update(t._trial_id for t in claimed)  # a claimed trial beats until it is told
        for group in programs(claimed):
            ran += train(group)
            beat.pending.difference_update(t._trial_id for t in group)
