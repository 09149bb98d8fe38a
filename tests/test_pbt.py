"""Population-based training: exact exploit/explore on the member axis, rescue of diverged members, exact resume."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from runstore import run_folder, run_store
from runstore.run_folder import RunFolder
from training.__main__ import main
from training.engine.pbt import PbtConfig, apply, learning_rates, plan
from training.runs.resume import resume
from training.tasks.regression import RegressionConfig, RegressionTask

VOLATILE = ("wall", "ts", "perf/steps_per_sec", "sys/cpu_percent", "sys/rss_mb")


def population_state(lrs):
    tasks = [RegressionTask(RegressionConfig(lr=lr, seed=i)) for i, lr in enumerate(lrs)]
    states = [t.init(jax.random.key(i)) for i, t in enumerate(tasks)]
    return jax.tree.map(lambda *leaves: jnp.stack(leaves), *states)


def test_plan_copies_the_bottom_from_the_top_with_the_configured_factors():
    cfg = PbtConfig(interval=10, fraction=0.25, factors=(0.8, 1.25), seed=3)
    lrs = np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8])
    losses = [0.5, 0.1, 0.9, 0.3, 0.05, 0.7, 0.2, 1.5]  # best: 4, 1; worst: 7, 2
    copies = plan(losses, lrs, 100, cfg, higher_is_better=False)
    assert sorted(c["member"] for c in copies) == [2, 7]
    for c in copies:
        assert c["source"] in (4, 1) and c["old_lr"] == lrs[c["member"]]
        assert min(abs(c["new_lr"] / lrs[c["source"]] - f) for f in (0.8, 1.25)) < 1e-6
    assert plan(losses, lrs, 100, cfg, False) == copies  # deterministic for a seed and step
    accs = [-x for x in losses]
    assert sorted(c["member"] for c in plan(accs, lrs, 100, cfg, higher_is_better=True)) == [2, 7]
    assert plan([0.2] * 8, lrs, 100, cfg, False) == []  # converged members: no copy between equals
    forced = plan(losses, lrs, 100, cfg, False, forced=[0])  # a diverged member is replaced whatever its rank
    assert sorted(c["member"] for c in forced) == [0, 2, 7] and forced[0]["reason"] == "diverged"


def test_apply_copies_arrays_exactly_and_sets_the_new_learning_rates():
    lrs = np.array([0.01, 0.02, 0.03, 0.04])
    state = population_state(lrs)
    copies = [{"member": 3, "source": 0, "new_lr": 0.0125}, {"member": 1, "source": 2, "new_lr": 0.024}]
    new_state, new_lrs = apply(state, copies, lrs)

    def copied_part(s):  # everything but the learning rate itself
        return [s["params"], s["opt_state"].inner_state, s["opt_state"].count]

    for leaf_before, leaf_after in zip(
        jax.tree.leaves(copied_part(state)), jax.tree.leaves(copied_part(new_state)), strict=True
    ):
        before, after = np.asarray(leaf_before), np.asarray(leaf_after)
        np.testing.assert_array_equal(after[3], before[0])  # a copy, bit for bit ...
        np.testing.assert_array_equal(after[1], before[2])
        np.testing.assert_array_equal(after[[0, 2]], before[[0, 2]])  # ... and the others untouched
    np.testing.assert_allclose(learning_rates(new_state), [0.01, 0.024, 0.03, 0.0125], rtol=1e-6)
    np.testing.assert_allclose(new_lrs, [0.01, 0.024, 0.03, 0.0125])


def pbt_argv(root: Path, *extra: str) -> list[str]:
    return [
        "regression",
        "--population",
        "lr=0.0001,0.001,0.3,2.0",
        "--pbt-interval",
        "50",
        "--steps",
        "400",
        "--runs-root",
        str(root),
        "--wandb",
        "disabled",
        "--no-tensorboard",
        "--quiet",
        *extra,
    ]


def members(root: Path) -> list[Path]:
    return sorted(root.iterdir(), key=lambda d: run_store.read_json(d / run_folder.CONFIG)["member"])


def lineage(run_dir: Path) -> list:
    doc = run_store.read_json(run_dir / run_folder.ARTIFACTS / run_folder.TABLES / "pbt__lineage.json")
    return doc["rows"] if doc else []


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict]]:
    """The small PBT population trained once without a stop, for both tests below: (runs root, output lines)."""
    root = tmp_path_factory.mktemp("pbt") / "runs"
    root.mkdir()
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(pbt_argv(root)) == 0
    return root, [json.loads(ln) for ln in out.getvalue().splitlines()]


def test_a_diverged_member_is_rescued_and_the_lineage_is_recorded(uninterrupted):
    root, lines = uninterrupted  # lr 2.0 diverges under SGD; PBT replaces it instead of ending it
    assert [ln["state"] for ln in lines] == ["finished"] * 4
    dirs = members(root)
    rescued = lineage(dirs[3])
    assert rescued[0][4] == "diverged" and rescued[0][1] in (1, 2)
    for d in dirs:
        recs = RunFolder(d).records()[0]
        assert recs[0]["step"] == 0 and all("pbt/lr" in r for r in recs[1:]) and np.isfinite(recs[-1]["train/loss"])
        assert abs(recs[-1]["regression/weight"] - 2.0) < 0.1
        assert run_store.read_json(d / run_folder.CONFIG)["pbt"]["interval"] == 50
    lrs = [r["pbt/lr"] for r in RunFolder(dirs[0]).records()[0] if "pbt/lr" in r]
    assert lrs[0] == pytest.approx(0.0001) and lrs[-1] != pytest.approx(0.0001)  # the slowest member was moved


def test_a_stopped_pbt_population_resumes_identically(runs_root, monkeypatch, uninterrupted):
    full = uninterrupted[0]
    real, polls = RunFolder.stop_requested, []

    def stop_requested(folder: RunFolder) -> bool:
        polls.append(folder.path)
        if len(polls) == 4 * 17:  # the 17th chunk (step 170): between two PBT steps
            folder.request_stop()
        return real(folder)

    monkeypatch.setattr(RunFolder, "stop_requested", stop_requested)
    assert main(pbt_argv(runs_root)) == 0
    monkeypatch.setattr(RunFolder, "stop_requested", real)
    assert {RunFolder(d).status()["step"] for d in members(runs_root)} == {170}
    outcomes = resume(members(runs_root)[0], console=False)
    assert [s for _, s, _ in outcomes] == ["finished"] * 4
    for part, whole in zip(members(runs_root), members(full), strict=True):
        strip = lambda d: [{k: v for k, v in r.items() if k not in VOLATILE} for r in RunFolder(d).records()[0]]  # noqa: E731
        assert strip(part) == strip(whole)
        assert lineage(part) == lineage(whole)
