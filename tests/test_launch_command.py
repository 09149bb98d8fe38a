"""The page's launch command for a population (dashboard/processes/launcher.build_command with a `Population`)
parses back with the training CLI's own parser: its axes, PBT settings and members' root, nothing lost."""

from __future__ import annotations

from pathlib import Path

from dashboard.processes import launcher
from settings.config import parse_config
from settings.registry import task_settings
from training import cli


def test_a_population_launch_command_parses_back_with_its_axes_pbt_and_root(tmp_path: Path) -> None:
    cfg = parse_config("regression", {"steps": "400"})
    pbt = {"interval": 100, "metric": "train/loss", "fraction": 0.5, "resample": 0.1}
    population = launcher.Population({"lr": ["0.001", "0.01"], "seed": ["0", "1"]}, pbt, tmp_path)
    cmd = launcher.build_command("regression", cfg, tmp_path / "m0", "pop", "disabled", population)
    assert cmd[1:4] == ["-m", "training", "regression"]
    args = cli.task_parser("regression", task_settings("regression")).parse_args(cmd[4:])
    assert args.population == ["lr=0.001,0.01", "seed=0,1"]
    assert (args.pbt_interval, args.pbt_metric, args.pbt_fraction, args.pbt_resample) == (100, "train/loss", 0.5, 0.1)
    assert (args.runs_root, args.run_dir, args.name, args.wandb) == (tmp_path, tmp_path / "m0", "pop", "disabled")
    assert args.steps == "400"  # parsed by the task's config, as the form's values are
    single = launcher.build_command("regression", cfg, tmp_path / "r", None, "disabled")  # no population: no flags
    args = cli.task_parser("regression", task_settings("regression")).parse_args(single[4:])
    assert args.population == [] and args.pbt_interval is None and args.runs_root is None
