"""A sweep trial's Optuna state follows what its run did, and the Sweeps page names what trials are judged by.

A worker process trains a small grid on SQLite with the default MedianPruner: every run folder that
says "finished" is a COMPLETE trial holding the run's final objective value, and every PRUNED trial's
run folder says "pruned" and stopped at the step the trial was pruned (its last reported step).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import optuna
import pytest
from optuna.trial import TrialState

from runstore.run_folder import RunFolder
from settings.sweep import study as studies
from settings.sweep.space import parse_space
from training.tasks import load_task

pytestmark = pytest.mark.slow  # one worker process compiling JAX: a few seconds
STEPS = 60
GOOD, BAD = (0.3, 0.2, 0.25), (0.001,)  # lr: a loss of ~0.12 by step 10, or still ~5.7 there


def _grid(root: Path, name: str, lrs: tuple[float, ...]) -> str:
    """A grid study over `lrs`, in this order (the first three are the MedianPruner's startup trials)."""
    url = studies.default_url(root)
    space = parse_space(["lr=" + ",".join(map(str, lrs))], load_task("regression").Config, "grid")
    base = {"steps": STEPS, "log_every": 10, "points": 32}
    studies.create(name, url, studies.StudySpec("regression", base, space, "grid", tensorboard=False))
    return url


def _steps(run_dir: Path) -> list[int]:
    return [r["step"] for r in RunFolder(run_dir).records()[0] if "train/loss" in r]


def test_trial_states_follow_what_their_runs_did(tmp_path: Path) -> None:
    url = _grid(tmp_path, "honest", GOOD + BAD)
    argv = ["worker", "--sweep", "honest", "--storage", url, "--runs-root", str(tmp_path), "--wandb", "disabled"]
    env = {**os.environ, "WANDB_MODE": "disabled"}
    done = subprocess.run(
        [sys.executable, "-m", "training", *argv], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    trials = optuna.load_study(study_name="honest", storage=url).get_trials()
    assert len(trials) == 4 and all("run_id" in t.user_attrs for t in trials)
    by_state: dict[TrialState, list[float]] = {}
    for t in trials:
        run_dir = tmp_path / t.user_attrs["run_id"]
        status = RunFolder(run_dir).status()
        by_state.setdefault(t.state, []).append(t.params["lr"])
        if status["state"] == "finished" or t.state == TrialState.COMPLETE:
            assert (status["state"], t.state) == ("finished", TrialState.COMPLETE), (t.number, status)
            assert status["step"] == STEPS and max(_steps(run_dir)) == STEPS
            assert t.value == pytest.approx(status["final"]["train/loss"], rel=1e-6)  # the run's own final value
        if status["state"] == "pruned" or t.state == TrialState.PRUNED:
            assert (status["state"], t.state) == ("pruned", TrialState.PRUNED), (t.number, status)
            # stopped at the step its pruner judged: nothing trained or logged past it
            assert status["step"] == t.last_step == max(_steps(run_dir)) < STEPS, (status, t.intermediate_values)
            assert t.value == pytest.approx(t.intermediate_values[t.last_step])
            assert "MedianPruner" in status["message"] and f"step {t.last_step}" in status["message"]
    assert sorted(by_state) == [TrialState.COMPLETE, TrialState.PRUNED], by_state
    assert sorted(by_state[TrialState.PRUNED]) == sorted(BAD) and sorted(by_state[TrialState.COMPLETE]) == sorted(GOOD)
    assert {t.user_attrs.get("objective") for t in trials if t.state == TrialState.COMPLETE} == {"train/loss"}


def test_pruner_and_direction_are_checked_and_kept(tmp_path: Path) -> None:
    """`--sweep-pruner threshold:V` prunes on the losing side of V for either direction; a bad spec is one
    line naming the flag, and nothing is created."""
    from settings.fields import ConfigError

    assert studies.make_pruner("threshold:1.5", "minimize")._upper == 1.5
    assert studies.make_pruner("threshold:0.9", "maximize")._lower == 0.9
    assert isinstance(studies.make_pruner("none", "minimize"), optuna.pruners.NopPruner)
    url = studies.default_url(tmp_path)
    space = parse_space(["lr=0.1,0.2"], load_task("regression").Config, "grid")
    for bad, field in [
        (studies.Objective(pruner="threshold:x"), "sweep_pruner"),
        (studies.Objective(direction="up"), "sweep_direction"),
    ]:
        with pytest.raises(ConfigError) as err:
            studies.create("bad", url, studies.StudySpec("regression", {}, space, "grid", objective=bad))
        assert list(err.value.errors) == [field]
    objective = studies.Objective("train/loss", "maximize", "threshold:0.5")
    studies.create("up", url, studies.StudySpec("regression", {}, space, "grid", objective=objective))
    study = studies.load("up", url)
    assert studies.direction_of(study) == "maximize" and study.pruner._lower == 0.5
    assert not any(s.study_name == "bad" for s in optuna.get_all_study_summaries(studies.storage(url)))


def test_sweeps_page_names_the_objective_and_its_direction_and_shows_values(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from settings.sweep import report
    from tests.apptest_pages import app

    url = _grid(tmp_path, "shown", (0.3, 0.001, 0.2))
    study = studies.load("shown", url)
    done = study.ask()
    done.set_user_attr("objective", "train/loss")
    study.tell(done, 0.2134)
    cut = study.ask()
    cut.report(5.73, 10)
    study.tell(cut, state=TrialState.PRUNED)
    monkeypatch.setenv("JAXDASH_RUNS", str(tmp_path))
    monkeypatch.delenv(report.STORAGE_ENV, raising=False)
    at = app("views/sweep.py")
    assert not at.error, [e.value for e in at.error]
    captions = " ".join(c.value for c in at.caption)
    assert "Objective: train/loss, minimized" in captions, captions
    [table] = [d.value for d in at.dataframe if "trial" in d.value.columns]
    column = "train/loss (minimize)"
    assert column in table.columns, list(table.columns)
    rows = {int(r["trial"]): (r["state"], r[column], r["step"]) for _, r in table.iterrows()}
    assert rows[done.number][:2] == ("finished", pytest.approx(0.2134))
    assert rows[cut.number] == ("pruned", pytest.approx(5.73), 10)


def test_the_sweep_form_sends_the_objective_and_its_direction(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from dashboard.forms.sweep_form import SweepRequest, sweep_argv
    from settings.fields import ConfigError
    from training import cli

    monkeypatch.setenv("JAXDASH_RUNS", str(tmp_path))
    argv = sweep_argv(
        "regression", SweepRequest("lr=0.1,0.2", "grid", 2, 1, "s", metric="train/loss", direction="maximize")
    )
    args = cli.task_parser("regression", load_task("regression")).parse_args(argv[1:])
    assert (args.sweep_metric, args.sweep_direction, args.sweep_pruner) == ("train/loss", "maximize", "median")
    with pytest.raises(ConfigError) as err:
        sweep_argv("regression", SweepRequest("lr=0.1", "grid", 2, 1, "s", metric="--steps"))
    assert list(err.value.errors) == ["objective"]
