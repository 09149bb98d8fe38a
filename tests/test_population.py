"""Populations: K members in one vmapped program, each an ordinary run with the single run's metrics.

"Same metrics as a single run with the same lr/seed" is what proves the vmap: a member that saw
another member's data, learning rate or PRNG key would log different numbers.
"""

from __future__ import annotations

import dataclasses
import glob
import json
from pathlib import Path

import numpy as np
import pytest

from runstore import run_folder, run_store
from runstore.run_folder import RunFolder
from runwriters.base import MemoryWriter
from settings.config import ConfigError
from settings.population import member_raws, parse_axes
from tests import wandb_leet
from tests.test_data import write_idx_dataset
from training.__main__ import main
from training.runs.in_memory import train
from training.runs.resume import resume
from training.runs.run import NewRuns, execute
from training.tasks.mnist import MnistConfig, MnistTask
from training.tasks.regression import RegressionConfig, RegressionTask


def train_regression(cfg, writer):
    return train(RegressionTask, cfg, writer)[0]


def train_mnist(cfg, writer):
    return train(MnistTask, cfg, writer)[0]


def values(writer: MemoryWriter) -> list[tuple[int, dict[str, float]]]:
    return [(s, {k: v for k, v in d.items() if k.split("/")[0] not in ("perf", "sys")}) for s, d in writer.scalars]


def assert_same_run(member: list[tuple[int, dict]], single: list[tuple[int, dict]], rtol: float) -> None:
    assert [s for s, _ in member] == [s for s, _ in single]
    for (_, a), (_, b) in zip(member, single, strict=True):
        assert set(a) == set(b)
        np.testing.assert_allclose([a[k] for k in sorted(a)], [b[k] for k in sorted(b)], rtol=rtol)


def test_cli_population_writes_one_run_per_member(runs_root, capsys):
    argv = [
        "regression",
        "--population",
        "lr=0.001,0.02",
        "--population",
        "seed=0,1",
        "--steps",
        "100",
        "--optimizer",
        "adam",
        "--runs-root",
        str(runs_root),
        "--wandb",
        "offline",
        "--quiet",
    ]
    assert main(argv) == 0
    lines = [json.loads(ln) for ln in capsys.readouterr().out.splitlines()]
    assert [ln["member"] for ln in lines] == [0, 1, 2, 3] and {ln["state"] for ln in lines} == {"finished"}
    dirs = [Path(ln["run_dir"]) for ln in lines]
    docs = [run_store.read_json(d / run_folder.CONFIG) for d in dirs]
    assert [(d["config"]["lr"], d["config"]["seed"]) for d in docs] == [(0.001, 0), (0.001, 1), (0.02, 0), (0.02, 1)]
    groups = {d["group"] for d in docs}
    assert len(groups) == 1 and [d["member"] for d in docs] == [0, 1, 2, 3]
    (group,) = groups
    for i, (run_dir, doc) in enumerate(zip(dirs, docs, strict=True)):
        status = RunFolder(run_dir).status()
        assert (status["state"], status["group"], status["member"], status["step"]) == ("finished", group, i, 100)
        assert (run_dir / run_folder.TENSORBOARD).is_dir() and run_store.read_json(
            run_dir / run_folder.ARTIFACTS / run_folder.TABLES / "fit__data.json"
        )
        single = MemoryWriter()
        result = train_regression(
            RegressionConfig(steps=100, optimizer="adam", lr=doc["config"]["lr"], seed=doc["config"]["seed"]), single
        )
        logged = [
            (r["step"], {k: r[k] for k in ("train/loss", "regression/weight", "regression/bias") if k in r})
            for r in RunFolder(run_dir).records()[0]
        ]
        assert_same_run(logged, values(single), rtol=1e-6)
        assert lines[i]["final"] == pytest.approx(result.final, rel=1e-6)
    # Each member is its own W&B run, all in the population's group.
    (folder,) = glob.glob(str(dirs[3] / run_folder.WANDB / "offline-run-*"))
    out = wandb_leet.inspect(folder, "--json")
    (run,) = [json.loads(ln)["run"] for ln in out.stdout.splitlines() if '"type": "run"' in ln or '"type":"run"' in ln]
    assert run["run_group"] == group


def test_regression_population_matches_single_runs_and_compiles_once():
    cfgs = [RegressionConfig(steps=95, lr=lr, seed=seed) for lr in (0.005, 0.05) for seed in (1, 2)]
    writers = [MemoryWriter() for _ in cfgs]
    results = train(RegressionTask, cfgs, writers)
    assert results[0].extra["traces"] == {"chunk[10]": 1, "chunk[5]": 1}  # one program for all K
    for cfg, writer, result in zip(cfgs, writers, results, strict=True):
        single = MemoryWriter()
        expected = train_regression(cfg, single)
        assert_same_run(values(writer), values(single), rtol=1e-6)
        assert result.final == pytest.approx(expected.final, rel=1e-6)
        assert [s for s, _ in writer.tables] == [s for s, _ in single.tables]
        assert writer.latest_table("fit/curve") == single.latest_table("fit/curve")


@pytest.fixture(scope="module")
def idx_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("idx")
    write_idx_dataset(folder, n_train=700, n_test=150, seed=3)
    return str(folder)


def test_mnist_population_matches_single_runs_and_isolates_a_diverged_member(idx_dir):
    # Member 1 (SGD at lr 1e6) diverges in its first chunk; members 0 and 2 must not notice.
    base = MnistConfig(data_dir=idx_dir, log_every=8, epochs=2, optimizer="sgd", eval_every=10)
    cfgs = [dataclasses.replace(base, lr=lr, seed=seed) for lr, seed in ((0.05, 0), (1e6, 0), (0.05, 1))]
    writers = [MemoryWriter() for _ in cfgs]
    results = train(MnistTask, cfgs, writers)
    assert [r.state for r in results] == ["finished", "diverged", "finished"]
    state, message = writers[1].closed
    assert state == "diverged" and "--lr 0.001" in message and len(writers[1].scalars) == 2  # step 0 and the bad chunk
    for i in (0, 2):
        single = MemoryWriter()
        expected = train_mnist(cfgs[i], single)
        assert_same_run(values(writers[i]), values(single), rtol=1e-4)
        assert results[i].final == pytest.approx(expected.final, rel=1e-4)
        assert [s for s, _ in writers[i].histograms] == [21, 42]
        assert [s for s, t in writers[i].tables if "test/confusion" in t] == [42]
        assert writers[i].latest_table("test/confusion") == single.latest_table("test/confusion")


def test_stop_file_in_one_member_stops_the_group_and_the_population_resumes_as_a_whole(runs_root, monkeypatch):
    real, polls = RunFolder.stop_requested, []

    def stop_requested(folder: RunFolder) -> bool:  # the group checks every member's dir once per chunk
        polls.append(folder.path)
        if len(polls) == 3 * 5:  # 5th chunk, last member checked: drop a real stop file there
            folder.request_stop()
        return real(folder)

    monkeypatch.setattr(RunFolder, "stop_requested", stop_requested)
    argv = [
        "regression",
        "--population",
        "lr=0.005,0.01,0.02",
        "--steps",
        "200",
        "--ckpt-every",
        "30",
        "--runs-root",
        str(runs_root),
        "--wandb",
        "disabled",
        "--no-tensorboard",
        "--quiet",
    ]
    assert main(argv) == 0
    dirs = sorted(runs_root.iterdir(), key=lambda d: run_store.read_json(d / run_folder.CONFIG)["member"])
    assert [RunFolder(d).status()["state"] for d in dirs] == ["stopped"] * 3
    assert [RunFolder(d).status()["step"] for d in dirs] == [50] * 3
    monkeypatch.setattr(RunFolder, "stop_requested", real)
    outcomes = resume(dirs[1], console=False)  # any member resumes the whole population
    assert [d for d, _, _ in outcomes] == dirs and [s for _, s, _ in outcomes] == ["finished"] * 3
    for (run_dir, _, result), lr in zip(outcomes, (0.005, 0.01, 0.02), strict=True):
        expected = train_regression(RegressionConfig(steps=200, lr=lr), MemoryWriter())
        assert result.final == pytest.approx(expected.final, rel=1e-6)
        assert [r["step"] for r in RunFolder(run_dir).records()[0]] == list(range(0, 201, 10))
        assert RunFolder(run_dir).status()["resumed_from"] == 50


def test_population_arguments_are_validated():
    assert parse_axes(["lr=0.1, 0.2", "seed=3"]) == {"lr": ["0.1", "0.2"], "seed": ["3"]}
    for bad, fix in (
        (["hidden=64,32"], "lr and seed only"),
        (["lr"], "FIELD=V1,V2"),
        (["lr=1", "lr=2"], "given twice"),
    ):
        with pytest.raises(ConfigError, match=fix):
            parse_axes(bad)
    with pytest.raises(ConfigError) as err:
        execute("regression", member_raws({}, {"lr": ["0.1", "-1"]}), NewRuns(axes=["lr"]))
    assert "lr" in err.value.errors and "Learning rate must be > 0" in err.value.errors["lr"]
    assert member_raws({"epochs": "1"}, {"seed": ["4", "5"]}) == [
        {"epochs": "1", "seed": "4"},
        {"epochs": "1", "seed": "5"},
    ]
