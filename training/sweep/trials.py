"""Running a batch of Optuna trials as run folders: one vmapped population, or one run.

Each trial is an ordinary run folder whose config.json has a top-level "sweep" entry
({"study", "trial", "program"}); trials that differ only in lr and seed share one program
(a population, `settings/population.py`). While they train, each chunk's value is reported to
Optuna (trial.report) and a lone trial the pruner cuts stops at that step: its run ends "pruned" and
the trial PRUNED. A run that trained to its end is COMPLETE with its objective value.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import optuna

from runstore import run_states, tags
from runstore.run_folder import RunFolder
from runwriters.base import Tracking
from settings.fields import parse_config
from settings.population import VARIED
from settings.registry import canonical_spec
from settings.sweep import server
from settings.sweep import study as studies
from training.runs.lifecycle import StopFlag
from training.runs.run import MemberRuns, NewRuns, create_runs, train_members
from training.tasks import load_task


def shares_program(space: Sequence[str]) -> bool:
    """Trials of this space differ only in lr/seed: K of them train as one vmapped population."""
    return set(space) <= set(VARIED)


def programs(trials: Sequence[optuna.Trial]) -> list[list[optuna.Trial]]:
    """The trials grouped by their settings other than lr/seed: each group can train as one program."""
    groups: dict[str, list[optuna.Trial]] = {}
    for t in trials:
        key = repr(sorted((k, str(v)) for k, v in t.params.items() if k not in VARIED))
        groups.setdefault(key, []).append(t)
    return list(groups.values())


def _mark(d: Path, study: str, trial: optuna.Trial, program: str) -> None:
    """config.json records the study and trial number (read by the sweep page)."""
    folder = RunFolder(d)
    cfg = folder.config({})
    cfg["sweep"] = {"study": study, "trial": trial.number, "program": program}
    folder.replace_config(cfg)
    trial.set_user_attr("run_id", d.name)
    trial.set_user_attr("program", program)


class TrialStop(StopFlag):
    """The runs' stop flag (SIGTERM, stop files), plus the study's pruner deciding between chunks.

    The engine hands it each chunk's scalars (`observe`) before it polls it, so a trial reports
    every chunk's value as it is measured and a pruned lone trial stops at the step its pruner
    judged, never later: a run that reached its last chunk is not asked, and finishes. One program
    trains a population: cutting one member would stop them all, so only lone trials are pruned.
    """

    def __init__(self, trials: list[optuna.Trial], dirs: list[Path], key: str | None):
        super().__init__(dirs)
        self.trials, self.key = trials, key
        self.reported: int | None = None  # the step of the lone trial's newest report
        self.pruned_at: int | None = None

    @property
    def ended_as(self) -> str:
        """The state the run ends in when this flag stopped it."""
        return run_states.PRUNED if self.pruned_at is not None else run_states.STOPPED

    def observe(self, step: int, scalars: Sequence[Mapping[str, float]]) -> None:
        """Report each trial's intermediate value at `step` (trial.report)."""
        self.reported = None
        if self.key is None:
            return
        try:
            for trial, values in zip(self.trials, scalars, strict=True):
                value = values.get(self.key)
                if isinstance(value, int | float) and math.isfinite(value):
                    trial.report(float(value), step)
                    self.reported = step
        except server.STORAGE_ERRORS:
            # The storage is unreachable: the run trains on and keeps every value; no more reports or
            # verdicts (each would wait on the server), and the tell after the run says what failed.
            self.key, self.reported = None, None

    def __call__(self) -> bool:
        if super().__call__():
            return True
        if len(self.trials) > 1 or self.reported is None:
            return False
        try:
            if self.trials[0].should_prune():
                self.pruned_at = self.reported
        except server.STORAGE_ERRORS:
            self.key = None  # as in `observe`
        return self.pruned_at is not None


def intermediate_key(metric: str, direction: str) -> str | None:
    """The chunk scalar a trial reports while it trains: the objective itself when it is a train metric;
    else train/loss, a loss standing for a minimised test loss (evaluations come after the pruner's
    verdict); None (no pruning) for a maximised test metric, which a loss would rank backwards."""
    if metric.startswith(tags.TRAIN + "/"):
        return metric
    return tags.TRAIN_LOSS if direction == "minimize" else None


def objective(final: dict[str, Any], metric: str) -> tuple[str, float] | None:
    """(key, value) a finished run is judged by: `metric`, or for "auto" test/loss, else train/loss."""
    for key in [metric] if metric != "auto" else [tags.TEST_LOSS, tags.TRAIN_LOSS]:
        if isinstance(final.get(key), int | float):
            return key, float(final[key])
    return None


def run_batch(study: optuna.Study, trials: list[optuna.Trial], root: Path, wandb_mode: str, console: bool) -> list[str]:
    """Train `trials` (one program) into new run folders under `root`; tell Optuna each outcome."""
    attrs = study.user_attrs
    task_cls = load_task(attrs["task"])
    space = list(attrs["space"])
    raws = [{**attrs["base"], **t.params} for t in trials]
    cfgs = [parse_config(task_cls.Config, r, task_cls.name) for r in raws]
    axes = [n for n in space if n in VARIED] if len(trials) > 1 else []
    name = f"{study.study_name}-t{trials[0].number}"
    command = ["python", "-m", "training", "worker", "--sweep", study.study_name]
    new = NewRuns(axes, root=root, name=name, command=command)
    dirs, names, group = create_runs(canonical_spec(attrs["task"]), task_cls, cfgs, new)
    for t, d in zip(trials, dirs, strict=True):
        _mark(d, study.study_name, t, group or d.name)
    metric = attrs.get("metric", "auto")
    stop = TrialStop(trials, dirs, intermediate_key(metric, studies.direction_of(study)))
    stop.install()
    tracking = Tracking(wandb_mode, attrs.get("tensorboard", True), console=console, group=group)
    outcomes = train_members(MemberRuns(task_cls, cfgs, dirs, names, tracking), stop=stop)
    return [_tell(study, trial, outcome, metric, stop) for trial, outcome in zip(trials, outcomes, strict=True)]


def _tell(
    study: optuna.Study, trial: optuna.Trial, outcome: tuple[Path, str, Any], metric: str, stop: TrialStop
) -> str:
    """Tell Optuna what happened to the trial's run (outcome: its folder, state and result): COMPLETE with its
    value, PRUNED, or FAIL (its run's state kept)."""
    d, state, result = outcome
    judged = objective(result.final, metric) if result else None
    if state == run_states.PRUNED:
        RunFolder(d).write_status(
            message=f"Pruned by the sweep's {type(study.pruner).__name__} at step {stop.pruned_at}."
        )
        study.tell(trial, state=optuna.trial.TrialState.PRUNED)
    elif state == run_states.FINISHED and judged is not None:
        trial.set_user_attr("objective", judged[0])
        study.tell(trial, judged[1])
    else:  # failed, diverged, stopped by hand, or no objective to judge: the run's state says which
        trial.set_user_attr("run_state", state if state != run_states.FINISHED else "no objective")
        study.tell(trial, state=optuna.trial.TrialState.FAIL)
    return state
