"""The example task (examples/sine.py) end to end: the CLI by file path and by module, a population,
and the run read back the way users read it (run store, TensorBoard's reader, `wandb leet inspect`).

Nothing in dashboard/ or the engine knows the task: it is found by its spec alone.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
from tensorboard.backend.event_processing import event_accumulator as ea

from runstore import run_folder, run_store
from runstore.run_folder import RunFolder
from settings.fields import ConfigError, parse_config
from settings.registry import available
from tests import wandb_leet
from training.tasks import load_task

ROOT = Path(__file__).resolve().parents[1]
STEPS, LOG_EVERY = 600, 50
LOGGED = [0, *range(LOG_EVERY, STEPS + 1, LOG_EVERY)]  # the initial loss, then one row per chunk


def _env(tmp: Path) -> dict[str, str]:
    """W&B offline with its state in tmp, no key, no reachable server."""
    env = dict(os.environ)
    for var, sub in (
        ("WANDB_DIR", "wd"),
        ("WANDB_CACHE_DIR", "wc"),
        ("WANDB_CONFIG_DIR", "wcfg"),
        ("WANDB_DATA_DIR", "wdata"),
    ):
        (tmp / sub).mkdir(exist_ok=True)
        env[var] = str(tmp / sub)
    env.update(
        WANDB_MODE="offline",
        WANDB_SILENT="true",
        WANDB_BASE_URL="http://127.0.0.1:9",
        HOME=str(tmp),
        WANDB_DISABLE_GIT="true",
    )
    env.pop("WANDB_API_KEY", None)
    return env


def _train(tmp: Path, spec: str, *args: str) -> list[dict]:
    """`python -m training SPEC ARGS` from the repo root; the JSON line of each run."""
    cmd = [sys.executable, "-m", "training", spec, "--wandb", "offline", "--quiet", *args]
    out = subprocess.run(cmd, cwd=ROOT, env=_env(tmp), capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]


def _wandb(run_dir: Path, *flags: str) -> str:
    folder = RunFolder(run_dir).status()["wandb"]["dir"]  # where the run says its W&B files are
    out = wandb_leet.inspect(folder, *flags, "--json")
    assert out.returncode == 0, out.stderr
    return out.stdout


@pytest.fixture(scope="module")
def single(tmp_path_factory) -> Path:
    """One run of the example, named by its file path."""
    tmp = tmp_path_factory.mktemp("sine")
    run_dir = tmp / "runs" / "sine"
    (line,) = _train(
        tmp,
        "examples/sine.py:SineTask",
        "--run-dir",
        str(run_dir),
        "--steps",
        str(STEPS),
        "--log-every",
        str(LOG_EVERY),
    )
    assert line["state"] == "finished" and Path(line["run_dir"]) == run_dir
    return run_dir


def test_the_task_is_found_by_spec_and_its_config_has_metadata(monkeypatch):
    monkeypatch.setenv("JAXDASH_TASKS", "examples.sine:SineTask")
    assert available()["examples.sine:SineTask"] == "examples.sine:SineTask"  # what the page offers
    task = load_task("examples.sine:SineTask")
    assert task is load_task("examples.sine:SineTask") and task.name == "sine" and task.panels == ("fit", "loss")
    assert load_task(str(ROOT / "examples" / "sine.py") + ":SineTask").name == "sine"
    cfg = parse_config(task.Config, {"hidden": "16", "points": "100", "noise": "0.2"})
    assert (cfg.hidden, cfg.points, cfg.noise) == (16, 100, 0.2)
    with pytest.raises(ConfigError, match="Hidden width must be >= 1"):
        parse_config(task.Config, {"hidden": "0"})


def test_help_lists_the_example_settings():
    out = subprocess.run(
        [sys.executable, "-m", "training", "examples/sine.py:SineTask", "--help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0 and "--hidden" in out.stdout and "Hidden width" in out.stdout
    assert "--noise" in out.stdout and "--points" in out.stdout


def test_cli_run_finishes_and_fits_the_sine(single):
    status = RunFolder(single).status()
    assert status["state"] == "finished" and status["step"] == STEPS
    doc = run_store.read_json(single / run_folder.CONFIG)
    assert doc["task"] == "sine" and doc["panels"] == ["fit", "loss"] and doc["config"]["hidden"] == 64
    records = RunFolder(single).records()[0]
    assert [r["step"] for r in records] == LOGGED
    losses = [r["train/loss"] for r in records]
    assert losses[-1] < losses[0] / 10 and losses[-1] < 0.05, losses  # noise 0.1: the floor is ~0.01

    curve = run_store.read_json(single / run_folder.ARTIFACTS / run_folder.TABLES / "fit__curve.json")
    assert curve["step"] == STEPS and curve["columns"] == ["x", "y", "y_true"]
    x, y, y_true = np.array(curve["rows"], dtype=np.float64).T
    assert len(x) >= 100 and np.all(np.diff(x) > 0), "the curve is drawn on a sorted grid"
    np.testing.assert_allclose(y_true, np.sin(x), atol=1e-6)
    assert np.sqrt(np.mean((y - y_true) ** 2)) < 0.15, "the fitted curve lies on the sine"
    data = run_store.read_json(single / run_folder.ARTIFACTS / run_folder.TABLES / "fit__data.json")
    assert data["columns"] == ["x", "y"] and len(data["rows"]) == 256


def test_tensorboard_has_the_loss_at_every_chunk(single):
    logdir = RunFolder(single).status()["tensorboard"]["logdir"]  # where the run says it wrote
    acc = ea.EventAccumulator(logdir, size_guidance={ea.SCALARS: 0, ea.IMAGES: 0})
    acc.Reload()
    loss = acc.Scalars("train/loss")
    assert [e.step for e in loss] == LOGGED
    assert loss[-1].value < loss[0].value / 10
    assert "fit/plot" in acc.Tags()["images"]


def test_wandb_offline_run_has_the_loss_and_finished(single):
    rows = [json.loads(line) for line in _wandb(single).splitlines() if line.strip()]
    history = [r["history"]["item"] for r in rows if r.get("type") == "history"]
    steps = [int(h["global_step"]) for h in history if "train/loss" in h]
    assert steps == LOGGED
    summary = json.loads(_wandb(single, "--summary"))
    assert summary["state"] == "finished" and summary["config"]["hidden"] == 64
    assert summary["summary"]["train/loss"]["min"] < 0.05  # a loss is summarised by its minimum


def test_population_by_module_spec_gives_each_member_its_run(tmp_path):
    lrs = [0.003, 0.01, 0.03]
    lines = _train(
        tmp_path,
        "examples.sine:SineTask",
        "--population",
        "lr=" + ",".join(map(str, lrs)),
        "--runs-root",
        str(tmp_path / "runs"),
        "--steps",
        "200",
        "--log-every",
        "50",
    )
    assert [ln["member"] for ln in lines] == [0, 1, 2] and {ln["state"] for ln in lines} == {"finished"}
    dirs = [Path(ln["run_dir"]) for ln in lines]
    assert len(set(dirs)) == 3 and all(d.parent == tmp_path / "runs" for d in dirs)
    docs = [run_store.read_json(d / run_folder.CONFIG) for d in dirs]
    assert [d["config"]["lr"] for d in docs] == lrs and [d["member"] for d in docs] == [0, 1, 2]
    assert len({d["group"] for d in docs}) == 1
    finals = []
    for d in dirs:
        assert RunFolder(d).status()["state"] == "finished"
        logdir = Path(RunFolder(d).status()["tensorboard"]["logdir"])
        assert logdir.is_relative_to(d / run_folder.TENSORBOARD) and list(logdir.glob("events.out.tfevents.*"))
        assert list(Path(RunFolder(d).status()["wandb"]["dir"]).glob("*.wandb")), "its own W&B run"
        assert (d / run_folder.ARTIFACTS / run_folder.TABLES / "fit__curve.json").is_file()
        finals.append(RunFolder(d).records()[0][-1]["train/loss"])
    assert len(set(finals)) == 3, "members differ in learning rate, so in loss"
    assert len({RunFolder(d).status()["wandb"]["id"] for d in dirs}) == 3


# ---- installed like its peers: `pip install .` gives `jaxdash` and `jaxdash-train` --------------------------------


def _jaxdash_module():
    spec = importlib.util.spec_from_file_location("jaxdash_under_test", ROOT / "jaxdash" / "cli.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_jaxdash_runs_streamlit_on_the_app_with_an_absolute_runs_root(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("JAXDASH_TASKS", "examples/sine.py:SineTask, mypkg.tasks:MyTask")
    monkeypatch.delenv("JAXDASH_ADDRESS", raising=False)
    cmd, env = _jaxdash_module().command(["--runs", "myruns", "--port", "8600", "--server.headless", "true"])
    assert cmd[1:4] == ["-m", "streamlit", "run"] and Path(cmd[4]) == ROOT / "dashboard" / "server_app.py"
    assert cmd[cmd.index("--server.address") + 1] == "127.0.0.1", "loopback unless asked"
    assert cmd[cmd.index("--server.port") + 1] == "8600" and cmd[-2:] == ["--server.headless", "true"]
    assert env["JAXDASH_RUNS"] == str(tmp_path / "myruns"), "the page starts runs from the package's folder"
    assert env["PYTHONPATH"].split(os.pathsep)[0] == str(tmp_path)
    assert env["JAXDASH_TASKS"] == f"{tmp_path}/examples/sine.py:SineTask,mypkg.tasks:MyTask"


@pytest.mark.slow
def test_wheel_installs_console_scripts_that_train_and_serve(tmp_path):
    wheels = tmp_path / "wheels"
    out = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", str(ROOT), "-w", str(wheels)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    (wheel,) = wheels.glob("jax_dashboard-*.whl")
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        entry_points = next(z.read(n).decode() for n in names if n.endswith("entry_points.txt"))
    assert {
        "jaxdash/__init__.py",
        "jaxdash/client.py",
        "dashboard/app.py",
        "dashboard/server_app.py",
        "dashboard/views/launch.py",
        "training/tasks/base.py",
        "runwriters/base.py",
        "components/figures.py",
        "dashboard/panels/static/modules/line_chart.js",  # the browser's code: read at import, served to the page
        "dashboard/panels/static/chart/engine.js",
        "dashboard/panels/static/stream/stream.js",
        "dashboard/panels/static/chart/style.css",
        "dashboard/panels/vendor/uPlot.iife.min.js",
    } <= names
    assert "jaxdash = jaxdash:main" in entry_points and "jaxdash-train = jaxdash:train" in entry_points

    # A fresh venv with only our wheel (pip writes the console scripts); dependencies from this venv's site-packages.
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    subprocess.run(
        [str(venv / "bin" / "pip"), "install", "-q", "--no-deps", "--no-index", str(wheel)], check=True, timeout=300
    )
    site = next(p for p in sys.path if p.endswith("site-packages"))
    env = {**_env(tmp_path), "PYTHONPATH": site}
    scripts = venv / "bin"
    train = subprocess.run(
        [
            str(scripts / "jaxdash-train"),
            "regression",
            "--steps",
            "50",
            "--runs-root",
            "y",
            "--quiet",
            "--wandb",
            "disabled",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert train.returncode == 0, train.stderr[-2000:]
    assert json.loads(train.stdout.splitlines()[0])["state"] == "finished"
    serve = subprocess.run(
        [str(scripts / "jaxdash"), "--runs", "y", "--print-command"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    app = Path(serve.stdout.split()[4])
    assert serve.returncode == 0 and app.is_file() and str(app).startswith(str(venv)), serve.stdout
    charts = subprocess.run(  # the page's chart modules read their browser code from the installed package
        [
            str(scripts / "python"),
            "-c",
            "import dashboard.panels.line_chart as m, dashboard.panels.live_numbers; print(m.__file__)",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert charts.returncode == 0 and charts.stdout.startswith(str(venv)), charts.stderr[-2000:]
