"""`--sweep` on the command line: bad input is one line naming the field, and nothing starts;
a grid of lr x seed trains as one vmapped population whose runs record their study and trial."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import optuna
import pytest

from runstore import run_folder
from settings.sweep import study as studies
from training.__main__ import main

TINY = ["regression", "--steps", "20", "--log-every", "10", "--quiet", "--wandb", "disabled", "--no-tensorboard"]


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        (["depth=1,2"], ["depth", "not a setting"]),
        (["lr=0.1:0.01:3"], ["lr", "empty"]),
        (["lr=log:0:0.1:4"], ["lr", "above 0"]),
        (["lr=uniform(0.1,0.01)"], ["lr", "empty"]),
        (["lr=log:1e-4:1e-1:100", "points=10:10000:100"], ["10,000 grid points"]),
        (["points=abc"], ["points", "not a whole number"]),
        (["lr=loguniform(1e-4,1e-1)"], ["lr", "random or tpe"]),
        (["optimizer=choice(sgd,rmsprop)"], ["optimizer", "rmsprop"]),
        (["lr="], ["lr", "no values"]),
    ],
)
def test_bad_sweep_is_one_line_and_starts_nothing(spec, words, tmp_path: Path, capsys) -> None:
    argv = [*TINY, "--runs-root", str(tmp_path / "runs")]
    for s in spec:
        argv += ["--sweep", s]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith("error: "), err
    for w in words:
        assert w in err, err
    assert not (tmp_path / "runs").exists()  # no study, no run folder


def test_bad_sweep_from_a_real_process_has_no_traceback(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "training", *TINY, "--runs-root", str(tmp_path), "--sweep", "lr=log:-1:1:3"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [proc.stderr.strip()]
    assert "lr" in proc.stderr and "Traceback" not in proc.stderr


def test_grid_of_lr_and_seed_trains_as_one_population(tmp_path: Path, capsys) -> None:
    root = tmp_path / "runs"
    argv = [*TINY, "--runs-root", str(root), "--study", "pop", "--max-parallel", "4"]
    argv += ["--sweep", "lr=0.01,0.05", "--sweep", "seed=0,1"]
    assert main(argv) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary == {"study": "pop", "trials": ["finished"] * 4}
    study = studies.load("pop", studies.default_url(root))
    trials = study.get_trials(states=(optuna.trial.TrialState.COMPLETE,))
    assert sorted((t.params["lr"], t.params["seed"]) for t in trials) == [(0.01, 0), (0.01, 1), (0.05, 0), (0.05, 1)]
    configs = {t.number: json.loads((root / t.user_attrs["run_id"] / run_folder.CONFIG).read_text()) for t in trials}
    programs = {c["sweep"]["program"] for c in configs.values()}
    assert len(programs) == 1 and programs == {c["group"] for c in configs.values()}  # one vmapped program
    for t in trials:
        cfg = configs[t.number]
        assert not (
            root / t.user_attrs["run_id"] / run_folder.TENSORBOARD
        ).exists()  # --no-tensorboard holds for trials too
        assert cfg["sweep"]["study"] == "pop" and cfg["sweep"]["trial"] == t.number
        assert (cfg["config"]["lr"], cfg["config"]["seed"]) == (t.params["lr"], t.params["seed"])
        assert t.value == pytest.approx(
            json.loads((root / t.user_attrs["run_id"] / run_folder.FINAL_METRICS).read_text())["train/loss"]
        )


def test_grid_over_a_shape_setting_trains_one_population_per_shape(tmp_path: Path, capsys) -> None:
    root = tmp_path / "runs"
    argv = [*TINY, "--runs-root", str(root), "--study", "shapes", "--max-parallel", "2"]
    assert main([*argv, "--sweep", "points=16,32", "--sweep", "lr=0.01,0.02"]) == 0
    trials = studies.load("shapes", studies.default_url(root)).get_trials()
    assert len(trials) == 4 and all(t.state == optuna.trial.TrialState.COMPLETE for t in trials)
    by_program: dict[str, set] = {}
    for t in trials:
        by_program.setdefault(t.user_attrs["program"], set()).add((t.params["points"], t.params["lr"]))
    # points changes array shapes: one program per points value, its lrs vmapped together
    assert sorted(map(sorted, by_program.values())) == [[(16, 0.01), (16, 0.02)], [(32, 0.01), (32, 0.02)]]


def test_list_valued_setting_is_swept_with_semicolons() -> None:
    from settings.sweep.space import parse_space
    from training.tasks import load_task

    space = parse_space(["hidden=16;32,32"], load_task("mnist").Config)
    assert space["hidden"].values == ("16", "32,32")


@pytest.mark.parametrize("storage", [None, "sqlite:////nonexistent-dir/x.db", "not-a-url"])
def test_worker_with_a_bad_storage_is_one_line(storage, tmp_path: Path, capsys) -> None:
    argv = ["worker", "--sweep", "nope", "--runs-root", str(tmp_path / "runs")]
    assert main(argv + (["--storage", storage] if storage else [])) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: --storage ") and "\n" not in err, err
    assert not (tmp_path / "runs").exists()


def test_a_diverged_trial_is_failed_once_not_retried(tmp_path: Path, capsys) -> None:
    root = tmp_path / "runs"
    argv = [*TINY, "--runs-root", str(root), "--study", "div", "--sweep", "lr=0.01,1e30", "--sweep", "points=16,32"]
    assert main(argv) == 1  # not every trial finished
    trials = studies.load("div", studies.default_url(root)).get_trials()
    states = sorted((t.params["lr"], t.params["points"], t.state.name) for t in trials)
    assert states == [(0.01, 16, "COMPLETE"), (0.01, 32, "COMPLETE"), (1e30, 16, "FAIL"), (1e30, 32, "FAIL")]
    assert {t.user_attrs.get("run_state") for t in trials if t.state.name == "FAIL"} == {"diverged"}


def test_helper_workers_claim_populations_as_large_as_the_sweeps() -> None:
    """--workers N starts N-1 queued helpers; each must claim up to --max-parallel trials as the
    first worker does (they claimed one each, so a grid program's population trained as runs of one)."""
    import argparse

    from training.sweep.command import _worker_argv

    args = argparse.Namespace(max_parallel=3, wandb=None)
    argv = _worker_argv("bench", "sqlite:////runs/sweeps.db", Path("/runs"), args)
    assert argv[:2] == ["worker", "--sweep"] and argv[argv.index("--max-parallel") + 1] == "3"
