"""Workers on other machines: separate processes pull trials of one study from one storage.

Two workers finish a 12-trial random sweep; a worker killed with SIGKILL mid-trial loses no
finished trial, its trial is failed by the heartbeat and re-run once as a new trial, and no
trial runs twice.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import optuna
import pytest
from optuna.trial import TrialState

from runstore import run_folder, run_store
from runstore.run_folder import RunFolder
from settings.sweep import study as studies
from settings.sweep.space import parse_space
from tests.fixtures_runs import hold_env, wait_held
from training.tasks import load_task

pytestmark = pytest.mark.slow  # real processes, each compiling JAX: tens of seconds
ENV = {**os.environ, "JAXDASH_SWEEP_GRACE_S": "4", "WANDB_MODE": "disabled"}


def _study(root: Path, name: str, steps: int, trials: int, storage: str = "sqlite") -> str:
    url = studies.default_url(root) if storage == "sqlite" else f"journal:{root / 'sweeps.journal'}"
    cfg = load_task("regression").Config
    space = parse_space(["lr=loguniform(0.001,0.1)"], cfg, "random")
    base = {"steps": steps, "log_every": 10, "points": 32}
    studies.create(name, url, studies.StudySpec("regression", base, space, "random", trials))
    return url


def _worker(root: Path, name: str, url: str, held: Path | None = None) -> subprocess.Popen:
    """A worker process; with `held`, it stops between its first trial's first chunks (see fixtures_runs)."""
    argv = ["worker", "--sweep", name, "--storage", url, "--runs-root", str(root), "--wandb", "disabled"]
    env = ENV if held is None else hold_env(ENV, held, chunks=1)
    return subprocess.Popen(
        [sys.executable, "-m", "training", *argv], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def test_two_workers_finish_a_12_trial_random_sweep(tmp_path: Path) -> None:
    url = _study(tmp_path, "two", steps=20, trials=12)
    workers = [_worker(tmp_path, "two", url) for _ in range(2)]
    outs = [w.communicate(timeout=400) for w in workers]
    assert [w.returncode for w in workers] == [0, 0], [o[1][-2000:] for o in outs]
    ran = [json.loads(o[0].strip().splitlines()[-1])["trials"] for o in outs]
    assert all(ran), ran  # both workers trained trials
    trials = optuna.load_study(study_name="two", storage=url).get_trials()
    done = [t for t in trials if t.state in (TrialState.COMPLETE, TrialState.PRUNED)]
    assert len(done) == 12 and sum(map(len, ran)) == len([t for t in trials if "run_id" in t.user_attrs])
    run_ids = [t.user_attrs["run_id"] for t in done]
    assert len(set(run_ids)) == 12
    for t in done:
        cfg = json.loads((tmp_path / t.user_attrs["run_id"] / run_folder.CONFIG).read_text())
        assert cfg["sweep"] == {"study": "two", "trial": t.number, "program": t.user_attrs["run_id"]}
        assert cfg["config"]["lr"] == pytest.approx(t.params["lr"])


@pytest.mark.parametrize("storage", ["sqlite", "journal"])
def test_killed_worker_loses_nothing_and_runs_no_trial_twice(tmp_path: Path, storage: str) -> None:
    """An RDB storage with Optuna's heartbeats, and the journal file (workers on a shared filesystem) with ours."""
    url = _study(tmp_path, "kill", steps=200, trials=3, storage=storage)
    a = _worker(tmp_path, "kill", url, held=tmp_path / "held")
    try:  # kill -9 while worker A's first trial is training (two chunks logged of 20), mid-trial
        wait_held(a, tmp_path / "held")
    finally:
        a.send_signal(signal.SIGKILL)
        a.wait()
    dirs = run_store.run_folders(tmp_path)
    assert len(dirs) == 1 and (dirs[0] / run_folder.RECORDS).exists()
    killed_dir = dirs[0]
    b = _worker(tmp_path, "kill", url)
    out, err = b.communicate(timeout=500)
    assert b.returncode == 0, err[-2000:]
    trials = optuna.load_study(study_name="kill", storage=studies.storage(url)).get_trials()
    complete = [t for t in trials if t.state in (TrialState.COMPLETE, TrialState.PRUNED)]
    failed = [t for t in trials if t.state == TrialState.FAIL]
    assert len(complete) == 3 and len(failed) == 1
    dead = failed[0]
    assert dead.user_attrs["run_id"] == killed_dir.name
    retry = [t for t in complete if t.system_attrs.get("failed_trial") == dead.number]
    assert len(retry) == 1 and retry[0].params == dead.params  # re-queued once, same settings
    assert len({t.user_attrs["run_id"] for t in complete} | {killed_dir.name}) == 4  # no run twice
    states = {d.name: RunFolder(d).status().get("state") for d in run_store.run_folders(tmp_path)}
    assert len(states) == 4 and states[killed_dir.name] == "crashed"  # its process died: the run reads as crashed


@pytest.mark.parametrize("storage", ["sqlite", "journal"])
def test_a_claimed_trial_beats_at_once_and_one_that_never_beat_still_goes_stale(tmp_path: Path, storage: str) -> None:
    """A worker killed before its heartbeat thread's first beat (a trial killed 1 s in, as CI saw)
    must not leave its trial RUNNING for ever: the claim beats at once, and the journal counts a
    trial that never beat from its start."""
    from settings.sweep import journal
    from training.sweep import worker

    url = _study(tmp_path, "early", steps=20, trials=2, storage=storage)
    study = optuna.load_study(study_name="early", storage=studies.storage(url))
    [claimed] = worker._claim(study, 1)
    for layer in (study._storage, getattr(study._storage, "_backend", None)):  # RDB storages come wrapped
        if hasattr(layer, "grace_period"):
            layer.grace_period = 0  # a trial silent for any time at all is stale now
    time.sleep(1.1)  # RDB heartbeats are compared by the second
    assert study._storage._get_stale_trial_ids(study._study_id) == [claimed._trial_id]  # it had beaten
    if storage == "journal":
        assert journal.BEAT in study._storage.get_trial(claimed._trial_id).system_attrs
        silent = study.ask()  # asked by a worker that died before any beat
        time.sleep(0.01)
        optuna.storages.fail_stale_trials(study)
        states = {t.number: t.state for t in study.get_trials()}
        assert states[silent.number] == TrialState.FAIL
        assert [t for t in study.get_trials() if t.system_attrs.get("failed_trial") == silent.number]  # re-queued


def test_workers_claiming_at_once_each_take_whole_programs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two workers asking at the same moment took some of one program's grid points each (a
    population of three trained as three runs, the sweep benchmark's 3 x 3 grid slower than its
    queue); under claim_lock each claim is one program's members."""
    claims = claims_at_once(studies.default_url(tmp_path), monkeypatch)
    assert sorted(claims) == [[32, 32, 32], [64, 64, 64]], claims


def claims_at_once(url: str, monkeypatch: pytest.MonkeyPatch) -> list[list[int]]:
    """Two threads claiming 3 trials each at once from a 2 x 3 grid (points x lr) under claim_lock, storage slowed:
    the `points` of each claim."""
    import threading

    from training.sweep import worker

    cfg = load_task("regression").Config
    space = parse_space(["points=32,64", "lr=0.01,0.02,0.03"], cfg, "grid")
    studies.create("race", url, studies.StudySpec("regression", {"steps": 20, "log_every": 10}, space, "grid"))
    joins = worker._next_joins
    monkeypatch.setattr(worker, "_next_joins", lambda *a: (time.sleep(0.05), joins(*a))[1])  # a slow storage
    claims: list[list[int]] = []

    def claim() -> None:
        study = optuna.load_study(study_name="race", storage=studies.storage(url))
        with worker.claim_lock(url, study._storage):  # a file lock beside SQLite, the server's lock on PostgreSQL
            claims.append([t.params["points"] for t in worker._claim(study, 3)])

    threads = [threading.Thread(target=claim) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return claims
