"""Running a batch of Optuna trials as run folders: one vmapped population, or one run.

Each trial is an ordinary run folder whose config.json has a top-level "sweep" entry
({"study", "trial", "program"}); trials that differ only in lr and seed share one program
(a population, `training/runs/population.py`). While they train, a thread reports each chunk's
metric to Optuna (trial.report); a lone trial the pruner
cuts is stopped through its stop file and told PRUNED.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import optuna

from runstore.run_folder import RecordsReader, RunFolder
from training.runs.population import VARIED
from training.runs.run import create_runs, train_members
from training.settings import parse_config
from training.sweep import server
from training.tasks import canonical_spec, load_task
from training.writers.base import Tracking

POLL_S = 0.5


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
    folder.update_config(cfg)
    trial.set_user_attr("run_id", d.name)
    trial.set_user_attr("program", program)


class Watch(threading.Thread):
    """Reports each run's chunk metric to its trial and stops a pruned lone trial (the worker beats heartbeats)."""

    def __init__(self, study: optuna.Study, trials: list[optuna.Trial], dirs: list[Path], metric: str):
        super().__init__(daemon=True)
        self.study, self.trials, self.dirs, self.metric = study, trials, dirs, metric
        self.readers = [RecordsReader(d) for d in dirs]
        self.pruned: set[int] = set()
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.wait(POLL_S):
            for i, (trial, d) in enumerate(zip(self.trials, self.dirs, strict=True)):
                self._report(i, trial, d)

    def _report(self, i: int, trial: optuna.Trial, d: Path) -> None:
        records = self.readers[i].read_new()
        # The storage unreachable for a moment: these values go unreported, the run itself keeps them.
        with contextlib.suppress(*server.STORAGE_ERRORS):
            for rec in records:
                value = rec.get(self.metric, rec.get("train/loss"))
                if isinstance(value, int | float) and isinstance(rec.get("step"), int):
                    trial.report(float(value), rec["step"])
            # One program trains a population: cutting one member would stop them all, so only lone trials prune.
            if records and len(self.trials) == 1 and i not in self.pruned and trial.should_prune():
                self.pruned.add(i)
                RunFolder(d).request_stop()


def objective(final: dict[str, Any], metric: str) -> float | None:
    """The value a finished run is judged by: `metric`, or test/loss, else train/loss."""
    for key in ([metric] if metric != "auto" else []) + ["test/loss", "train/loss"]:
        if isinstance(final.get(key), int | float):
            return float(final[key])
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
    dirs, names, group = create_runs(canonical_spec(attrs["task"]), task_cls, cfgs, axes, root, None, name, command)
    for t, d in zip(trials, dirs, strict=True):
        _mark(d, study.study_name, t, group or d.name)
    watch = Watch(study, trials, dirs, attrs.get("metric", "auto"))
    watch.start()
    try:
        tracking = Tracking(wandb_mode, attrs.get("tensorboard", True), console=console, group=group)
        outcomes = train_members(task_cls, cfgs, dirs, names, tracking)
    finally:
        watch.done.set()
        watch.join()
    states = []
    for i, (t, (_, state, result)) in enumerate(zip(trials, outcomes, strict=True)):
        value = objective(result.final, attrs.get("metric", "auto")) if result else None
        if i in watch.pruned or state == "stopped":
            study.tell(t, state=optuna.trial.TrialState.PRUNED)
            states.append("pruned")
        elif state == "finished" and value is not None:
            study.tell(t, value)
            states.append("finished")
        else:
            t.set_user_attr("run_state", state)
            study.tell(t, state=optuna.trial.TrialState.FAIL)
            states.append(state)
    return states
