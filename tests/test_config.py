"""Config parsing: one typed object per task, every problem reported at once in the field's own words."""

from __future__ import annotations

import dataclasses
import json
import sys

import pytest

from settings.config import ConfigError, config_fields, config_to_dict, parse_config
from settings.fields import fields
from settings.registry import BUILTIN, available, task_settings
from training import cli
from training.tasks import load_task
from training.tasks.mnist import MnistConfig, MnistTask
from training.tasks.regression import RegressionConfig


def test_defaults_match_the_seeds():
    reg = parse_config("regression")
    assert reg == RegressionConfig()
    assert (reg.points, reg.noise, reg.true_weight, reg.true_bias, reg.lr, reg.steps, reg.seed, reg.optimizer) == (
        128,
        0.5,
        2.0,
        -1.0,
        0.005,
        1000,
        42,
        "sgd",
    )
    mn = parse_config("mnist")
    assert (mn.hidden, mn.optimizer, mn.lr, mn.batch_size, mn.epochs) == ((128, 128), "adam", 1e-3, 32, 3)
    assert mn.train_size == 60_000


def test_strings_from_cli_or_form_are_coerced():
    raw = {
        "hidden": "256, 64",
        "lr": "3e-4",
        "batch_size": "64",
        "train_limit": "1_000",
        "test_limit": "all",
        "dataset": " fashion_mnist ",
        "eval_every": "200.0",
    }
    cfg = parse_config("mnist", raw)
    assert cfg.hidden == (256, 64) and cfg.lr == 3e-4 and cfg.batch_size == 64
    assert cfg.train_limit == 1000 and cfg.test_limit is None and cfg.dataset == "fashion_mnist"
    assert cfg.eval_every == 200 and cfg.train_size == 1000
    assert parse_config("regression", {"points": "1000000", "optimizer": "adam"}).points == 1_000_000


def test_every_error_is_reported_at_once_in_the_fields_words():
    with pytest.raises(ConfigError) as err:
        parse_config("regression", {"points": 1, "lr": "-1", "steps": "ten", "optimizer": "rmsprop", "colour": 3})
    errors = err.value.errors
    assert set(errors) == {"points", "lr", "steps", "optimizer", "colour"}
    assert errors["points"] == "Data points must be >= 2 (got 1)."
    assert errors["lr"] == "Learning rate must be > 0 (got -1)."
    assert errors["steps"] == "Steps must be a whole number (got 'ten')."
    assert "one of sgd, adam" in errors["optimizer"] and "not a setting" in errors["colour"]
    assert "--points" in str(err.value)  # the CLI's message names the flag


@pytest.mark.parametrize(
    ("task", "raw", "field"),
    [
        ("regression", {"points": 50_000_001}, "points"),
        ("regression", {"noise": "nan"}, "noise"),
        ("regression", {"true_bias": "inf"}, "true_bias"),
        ("regression", {"log_every": 0}, "log_every"),
        ("regression", {"seed": 2**32}, "seed"),
        ("regression", {"steps": 2.5}, "steps"),
        ("regression", {"steps": 10**12}, "steps"),
        ("mnist", {"dataset": "cifar10"}, "dataset"),
        ("mnist", {"hidden": "128,0"}, "hidden"),
        ("mnist", {"hidden": "100000,100000"}, "hidden"),
        ("mnist", {"hidden": ""}, "hidden"),
        ("mnist", {"epochs": 0}, "epochs"),
        ("mnist", {"eval_every": -1}, "eval_every"),
        ("mnist", {"train_limit": 0}, "train_limit"),
        ("mnist", {"batch_size": 0}, "batch_size"),
        ("mnist", {"train_limit": 10, "batch_size": 32}, "batch_size"),
        ("mnist", {"devices": -1}, "devices"),
    ],
)
def test_invalid_values_name_their_field(task, raw, field):
    with pytest.raises(ConfigError) as err:
        parse_config(task, raw)
    assert field in err.value.errors


def test_unknown_task_names_the_known_ones():
    with pytest.raises(ConfigError, match="unknown task 'gan'; use one of regression, mnist"):
        parse_config("gan")
    with pytest.raises(ConfigError, match="cannot load task 'no_such_module:Task'"):
        load_task("no_such_module:Task")


def test_round_trips_through_json():
    for task, cfg in (
        ("regression", RegressionConfig(points=500, optimizer="adam")),
        ("mnist", MnistConfig(hidden=(64,), train_limit=2000)),
    ):
        d = json.loads(json.dumps(config_to_dict(cfg)))
        assert parse_config(task, d) == cfg


def test_configs_are_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        RegressionConfig().lr = 1.0  # type: ignore[misc]


@pytest.mark.parametrize("task", ["regression", "mnist"])
def test_every_field_has_a_label_and_help_and_reaches_the_cli(task, capsys):
    infos = config_fields(task)
    assert [f.name for f in infos] == [f.name for f in dataclasses.fields(load_task(task).Config)]
    assert all(f.label and f.help for f in infos)
    with pytest.raises(SystemExit):
        cli.task_parser(task, load_task(task)).parse_args(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    for f in infos:
        assert f"--{f.name.replace('_', '-')}" in text and " ".join(f.help.split()) in text
    if task == "mnist":
        assert "{mnist,fashion_mnist}" in text and "{sgd,adam}" in text


def test_builtin_tasks_are_listed_and_declare_their_panels():
    assert {"regression", "mnist"} <= set(available())
    assert load_task("mnist") is MnistTask and MnistTask.panels == ("loss", "accuracy")
    assert load_task("regression").panels == ("fit", "loss")
    assert [f.name for f in fields(MnistConfig) if f.choices] == ["optimizer", "dataset"]


def test_the_builtin_settings_are_their_task_classes():
    for name, spec in BUILTIN.items():
        settings, cls = task_settings(name), load_task(name)
        assert spec == f"settings.{name}:SETTINGS"  # what the page reads: no model code
        assert (settings.name, settings.title, settings.Config, settings.panels) == (
            cls.name,
            cls.title,
            cls.Config,
            tuple(cls.panels),
        )
        assert settings.task == cls.spec()


USER_SETTINGS = """
from dataclasses import dataclass
from jaxdash import StepsConfig, TaskSettings, setting

@dataclass(frozen=True)
class WaveConfig(StepsConfig):
    width: int = setting(8, "Width", "Units of the hidden layer.", min=1, max=64)

SETTINGS = TaskSettings(name="wave", title="Wave", Config=WaveConfig, panels=("loss",), task="wave_model.py:WaveTask")
MISSING = TaskSettings(name="gone", title="Gone", Config=WaveConfig, panels=("loss",), task="gone.py:Task")
NOT_A_TASK = 3
"""
USER_MODEL = """
from jaxdash import Task
from wave_settings import SETTINGS

class WaveTask(Task):
    name, title, Config, panels = SETTINGS.name, SETTINGS.title, SETTINGS.Config, SETTINGS.panels
"""


def test_a_users_settings_module_is_read_without_its_model(tmp_path, monkeypatch):
    (tmp_path / "wave_settings.py").write_text(USER_SETTINGS)
    (tmp_path / "wave_model.py").write_text(USER_MODEL)
    monkeypatch.syspath_prepend(str(tmp_path))
    model = "jaxdash_user_wave_model"  # how training.tasks names a module it imports by path
    monkeypatch.delitem(sys.modules, model, raising=False)
    settings = task_settings("wave_settings:SETTINGS")
    assert settings.task == f"{tmp_path / 'wave_model.py'}:WaveTask"  # read from the settings' folder
    assert [f.label for f in config_fields("wave_settings:SETTINGS")][-1] == "Width"
    assert parse_config("wave_settings:SETTINGS", {"width": "12"}).width == 12
    with pytest.raises(ConfigError, match="Width must be <= 64"):
        parse_config("wave_settings:SETTINGS", {"width": "65"})
    assert model not in sys.modules  # the form and its checks never imported the model
    task = load_task("wave_settings:SETTINGS")  # training follows the settings to the class
    assert (task.__name__, task.name, task.Config) == ("WaveTask", "wave", settings.Config)
    assert task_settings(f"{tmp_path / 'wave_settings.py'}:SETTINGS").task == settings.task  # by path too
    with pytest.raises(ConfigError, match=r"'wave_settings:NOT_A_TASK' is neither a subclass of jaxdash.Task"):
        task_settings("wave_settings:NOT_A_TASK")
    with pytest.raises(ConfigError, match=r"cannot load task '.*gone.py:Task': FileNotFoundError"):
        load_task("wave_settings:MISSING")
