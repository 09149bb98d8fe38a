"""W&B Sweeps: the argv a `wandb agent` builds from sweeps/*.yaml is accepted by the training CLI.

The agent runs the YAML's `command`, replacing `${args}` with `--name=value` for every
parameter (one sampled value each), so every parameter must be a CLI flag in that form and
every value the sweep can pick must pass `parse_config`. No training happens here.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from settings.config import parse_config
from settings.registry import BUILTIN
from training import cli
from training.tasks import load_task

ROOT = Path(__file__).resolve().parents[1]
SWEEPS = sorted((ROOT / "sweeps").glob("*.yaml"))


def sample(spec: dict[str, Any], rng: random.Random) -> Any:
    """One value of a sweep parameter, as the sweep controller would pick it."""
    if "value" in spec:
        return spec["value"]
    if "values" in spec:
        return rng.choice(spec["values"])
    dist, lo, hi = spec.get("distribution"), spec.get("min"), spec.get("max")
    if dist == "log_uniform_values":
        return math.exp(rng.uniform(math.log(lo), math.log(hi)))
    if dist == "uniform":
        return rng.uniform(lo, hi)
    if dist == "int_uniform":
        return rng.randint(lo, hi)
    raise AssertionError(f"distribution {dist!r} is not handled by this test; add it")


def agent_argv(sweep: dict[str, Any], values: dict[str, Any]) -> list[str]:
    """The command's argv after `python -m training`, with `${args}` expanded like the agent does."""
    command = sweep["command"]
    assert command[:4] == ["${env}", ".venv/bin/python", "-m", "training"] and command[-1] == "${args}"
    assert (ROOT / sweep["program"]).is_file(), "wandb sweep checks that the program exists"
    return [*command[4:-1], *(f"--{name}={value}" for name, value in values.items())]


def parse_like_main(argv: list[str]):
    """What training.__main__.main does before training: parse flags, then build the config."""
    task, rest = argv[0], argv[1:]
    cls = load_task(task).Config
    args = cli.task_parser(task, load_task(task)).parse_args(rest)
    raw = {f.name: getattr(args, f.name) for f in dataclasses.fields(cls) if getattr(args, f.name) is not None}
    return args, parse_config(task, raw)


@pytest.mark.parametrize("path", SWEEPS, ids=[p.stem for p in SWEEPS])
def test_agent_argv_is_accepted(path):
    sweep = yaml.safe_load(path.read_text())
    params = sweep["parameters"]
    assert sweep["metric"]["name"] in {"train/loss", "train/acc", "test/loss", "test/acc"}  # tags the runs log
    rng = random.Random(0)
    for _ in range(20):  # random draws, as the bayes / random methods make them
        values = {name: sample(spec, rng) for name, spec in params.items()}
        args, cfg = parse_like_main(agent_argv(sweep, values))
        assert args.wandb == "online"
        for name, value in values.items():
            got = getattr(cfg, name)
            assert got == (tuple(int(h) for h in value.split(",")) if name == "hidden" else value), name
    for name, spec in params.items():  # and every listed value at least once (grid)
        for value in spec.get("values", []):
            parse_like_main(agent_argv(sweep, {name: value}))


@pytest.mark.parametrize("path", SWEEPS, ids=[p.stem for p in SWEEPS])
def test_the_agent_command_runs_as_written(path):
    """The command's interpreter is the checkout's, from the checkout (where `wandb agent` is started)."""
    command = yaml.safe_load(path.read_text())["command"]
    out = subprocess.run([*command[1:5], "--help"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "--lr" in out.stdout, out.stderr[-2000:]


def test_sweep_tasks_cover_both_cli_tasks():
    tasks = {yaml.safe_load(p.read_text())["command"][4] for p in SWEEPS}
    assert tasks == set(BUILTIN)


def test_wandb_keeps_the_agents_run_id(tmp_path):
    """Under an agent, WANDB_RUN_ID names the run the sweep created; the writer must not replace it.

    In a subprocess: wandb reads WANDB_SWEEP_ID once per process, as it would under the agent.
    """
    code = (
        "import json, sys; from runwriters.base import Tracking; from runwriters.wandb.writer import WandbWriter; "
        "w = WandbWriter(sys.argv[1], {'lr': 0.01}, Tracking('offline'), name='trial'); "
        "w.wait_ready(60); print(json.dumps(w.info)); w.close('finished')"
    )
    env = {**os.environ, "WANDB_SWEEP_ID": "abc123", "WANDB_RUN_ID": "agentrun7", "WANDB_MODE": "offline"}
    out = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr[-2000:]
    info = json.loads(out.stdout.strip().splitlines()[-1])
    assert info["mode"] == "offline" and info["id"] == "agentrun7", info


OPEN_AT = """
import sys, time
from settings.fields import ConfigError
from settings.sweep import study
time.sleep(max(0.0, float(sys.argv[2]) - time.time()))  # asleep, not spinning: 6 spinning processes took 2 cores
try:
    study.storage(sys.argv[1])
    print("opened")
except ConfigError as exc:
    print(exc.errors["storage"])
"""


def test_processes_opening_a_new_sweeps_db_at_once_all_open_it(tmp_path: Path) -> None:
    """The page, the CLI and workers may create sweeps.db at the same moment (Optuna's schema and version row)."""
    import time

    for attempt in range(2):
        url = f"sqlite:///{tmp_path / f'sweeps{attempt}.db'}"
        start = time.time() + 5  # every process past its imports, then all at once
        procs = [
            subprocess.Popen([sys.executable, "-c", OPEN_AT, url, str(start)], stdout=subprocess.PIPE, text=True)
            for _ in range(6)
        ]
        outputs = [p.communicate(timeout=120)[0].strip() for p in procs]
        assert outputs == ["opened"] * 6, outputs
