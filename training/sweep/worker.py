"""The worker loop: pull trials from a study's storage until its budget is done, on any machine.

    python -m training worker --sweep NAME --storage sqlite:////shared/runs/sweeps.db --runs-root /shared/runs

Several workers may share one storage. Each claims trials with `study.ask` (Optuna hands a
re-queued WAITING trial out first), beats their heartbeats while they train, and tells the
outcome. A worker killed mid-trial stops beating; after the grace period the next worker that
looks fails that trial and RetryHeartbeatStaleTrialCallback re-queues a copy (system attr
`failed_trial` names the original), so no finished trial is lost and none runs twice unknowingly.
"""

from __future__ import annotations

import time
from pathlib import Path

import optuna
from optuna.trial import TrialState

from training.cli import MAX_MEMBERS
from training.sweep import study as studies
from training.sweep.trials import run_batch, shares_program

IDLE_S = 2.0  # while other workers' trials run, look again this often (one of them may die)


def _counts(study: optuna.Study) -> dict[TrialState, int]:
    counts = dict.fromkeys(TrialState, 0)
    for t in study.get_trials(deepcopy=False):
        counts[t.state] += 1
    return counts


def _claim(study: optuna.Study, k: int) -> list[optuna.Trial]:
    """Up to `k` new trials within the budget; a trial asked past it (a race between workers) is failed."""
    budget = study.user_attrs["trials"]
    claimed = []
    space = studies.space_of(study)
    for _ in range(k):
        trial = study.ask(space)  # a re-queued trial keeps its own params; a new one samples the space
        live = [t for t in study.get_trials(deepcopy=False) if t.state != TrialState.FAIL]
        rank = sorted(t.number for t in live).index(trial.number)
        if rank >= budget:
            trial.set_user_attr("surplus", True)  # another worker claimed the last slot first
            study.tell(trial, state=TrialState.FAIL)
            break
        claimed.append(trial)
    return claimed


def _stale(study: optuna.Study) -> None:
    if isinstance(study._storage, optuna.storages._heartbeat.BaseHeartbeat):
        optuna.storages.fail_stale_trials(study)


def run_worker(
    name: str, url: str, root: Path, max_parallel: int = 1, wandb_mode: str = "disabled", console: bool = False
) -> list[str]:
    """Train trials of study `name` until its budget is finished; the states of the trials this worker ran."""
    study = studies.load(name, url)
    budget = study.user_attrs["trials"]
    batch = min(max_parallel, MAX_MEMBERS) if shares_program(study.user_attrs["space"]) else 1
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
        trials = _claim(study, max(1, min(batch, open_)))
        if trials:
            ran += run_batch(study, trials, root, wandb_mode, console)
