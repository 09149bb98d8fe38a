"""Hparams as W&B and TensorBoard show them: a client run's nested config flattened with dots on every page that
shows config, and tensorboardX's `add_hparams` side run folded into the run it describes (runstore/tb_hparams_run.py),
its hparams that run's, its metric values that run's summary, as TensorBoard's own HParams API serves them."""

from __future__ import annotations

import time
from pathlib import Path

import pandas as pd
import pytest
from tensorboardX import SummaryWriter

from runstore import run_folder, run_store, tb_logdir
from runstore.run_folder import RunFolder
from tests import tb_http
from tests.apptest_pages import app
from tests.test_run_detail_wandb import run_script

SCRIPT = """
import jaxdash

run = jaxdash.init(project="flat", name="nested", config={"model": {"hidden": 128, "act": "relu"}, "lr": 0.1})
run.log({"loss": 0.5})
run.finish()
"""
HPARAMS = {"lr": 0.01, "opt": "adam", "layers": 3, "bn": True}
METRICS = {"hparam/acc": 0.75, "hparam/loss": 0.25}  # exact in float32, as the event file stores them


def _detail_settings(run: str) -> dict[str, str]:
    """Run detail's configuration table (opened) as {setting: value}."""
    at = app("views/detail.py", run=run)
    at.session_state["detail_config"] = True
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    (table,) = [d.value for d in at.dataframe if "setting" in d.value.columns]
    return dict(zip(table["setting"], table["value"], strict=True))


def test_a_nested_client_config_is_shown_with_dotted_keys(tmp_path: Path, runs_root: Path) -> None:
    (run_dir,) = run_script(runs_root, tmp_path / "work", SCRIPT)
    assert run_store.read_json(run_dir / run_folder.CONFIG)["config"]["model"] == {"hidden": 128, "act": "relu"}  # kept
    table = app("views/runs.py").dataframe[0].value
    row = table[table["name"] == "nested"].iloc[0]
    assert row["config.model.hidden"] == 128 and row["config.model.act"] == "relu" and row["config.lr"] == 0.1
    assert "model.hidden=128" in row["config"] and "{" not in row["config"], row["config"]
    settings = _detail_settings(run_dir.name)
    assert settings["model.hidden"] == "128" and settings["model.act"] == "relu" and "model" not in settings
    live = app("views/live.py", run=run_dir.name)
    assert any("model.hidden=128" in c.value for c in live.caption), [c.value for c in live.caption]


def _write_with_hparams(logs: Path) -> None:
    """A tensorboardX run that logs a curve, then `add_hparams` with its default side-run name (a timestamp)."""
    writer = SummaryWriter(str(logs / "exp"))
    for step in range(3):
        writer.add_scalar("loss", 1.0 / (step + 1), step)
    writer.add_hparams(HPARAMS, METRICS)
    writer.close()


def _synced(logs: Path, runs: Path) -> Path:
    """The mirror of logs/exp once its summary holds the side run's metrics."""
    mirror = tb_logdir.mirror_root(runs) / "exp"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        tb_logdir.sync(logs, runs)
        if (run_store.read_json(mirror / run_folder.STATUS, {}) or {}).get("final"):
            break
        time.sleep(0.05)
    return mirror


def test_add_hparams_side_run_is_folded_into_its_run(
    tmp_path: Path, runs_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    logs = tmp_path / "logs"
    monkeypatch.setenv("JAXDASH_LOGDIR", str(logs))
    _write_with_hparams(logs)
    assert len([d for d in (logs / "exp").iterdir() if d.is_dir()]) == 1  # tensorboardX wrote its side run
    mirror = _synced(logs, runs_root)
    assert sorted(p.name for p in tb_logdir.mirror_root(runs_root).iterdir()) == ["exp"]  # one run, not two
    assert run_store.read_json(mirror / run_folder.STATUS)["final"] == METRICS
    table = app("views/runs.py").dataframe[0].value
    assert list(table["name"]) == ["exp"]
    row = table.iloc[0]
    assert (row["config.lr"], row["config.opt"], row["config.layers"], row["config.bn"]) == (0.01, "adam", 3, True)
    assert (row["final hparam/acc"], row["final hparam/loss"]) == (0.75, 0.25)
    settings = _detail_settings("exp")
    assert {k: settings[k] for k in HPARAMS} == {"lr": "0.01", "opt": "adam", "layers": "3.0", "bn": "True"}
    records, _ = RunFolder(mirror).records()
    assert [r["step"] for r in records] == [0, 1, 2] and all("hparam/acc" not in r for r in records)  # no 1-point chart


def test_tensorboards_hparams_api_agrees_with_the_folded_run(tmp_path: Path) -> None:
    """TensorBoard's HParams tab (its HTTP API) shows the side run's session: the same hparams and metric values."""
    from dashboard.processes.tensorboard_server import start_tensorboard

    logs, runs = tmp_path / "logs", tmp_path / "runs"
    _write_with_hparams(logs)
    mirror = _synced(logs, runs)
    (side,) = [d.name for d in (logs / "exp").iterdir() if d.is_dir()]
    tb = start_tensorboard(logs)
    try:
        deadline, want = time.monotonic() + 60, {}
        while time.monotonic() < deadline and not want.get(f"exp/{side}", {}).get("hparams"):
            want = tb_http.tensorboard_view(tb.url, logs.name)  # TensorBoard loads the logdir in the background
            time.sleep(0.2)
    finally:
        tb.close()
    session = want[f"exp/{side}"]
    got = tb_http.mirror_view(runs)
    assert set(got) == {"exp"} and got["exp"]["hparams"] == session["hparams"] == {**HPARAMS, "layers": 3.0}
    tb_metrics = {tag: series[-1][1] for tag, series in session["scalars"].items()}
    assert tb_metrics == run_store.read_json(mirror / run_folder.STATUS)["final"] == METRICS
    assert pd.Series(got["exp"]["scalars"]["loss"]).map(lambda p: p[0]).tolist() == [0, 1, 2]
