"""Config parsing: one typed object per task, every problem reported at once with its fix."""

from __future__ import annotations

import dataclasses
import json

import pytest

from training.config import (
    ConfigError,
    MnistConfig,
    RegressionConfig,
    config_from_dict,
    config_to_dict,
    parse_config,
)


def test_defaults_match_the_seeds():
    reg = parse_config("regression")
    assert reg == RegressionConfig()
    assert (reg.points, reg.noise, reg.true_weight, reg.true_bias, reg.lr, reg.steps, reg.seed) == (
        128,
        0.5,
        2.0,
        -1.0,
        0.005,
        1000,
        42,
    )
    mn = parse_config("mnist")
    assert (mn.hidden, mn.optimizer, mn.lr, mn.batch_size, mn.epochs) == ((128, 128), "adam", 1e-3, 32, 3)
    assert mn.steps_per_epoch == 60_000 // 32 and mn.total_steps == 3 * (60_000 // 32)


def test_strings_from_cli_or_form_are_coerced():
    cfg = parse_config(
        "mnist",
        {
            "hidden": "256, 64",
            "lr": "3e-4",
            "batch_size": "64",
            "train_limit": "1_000",
            "test_limit": "all",
            "dataset": " fashion_mnist ",
            "eval_every": "200.0",
        },
    )
    assert cfg.hidden == (256, 64) and cfg.lr == 3e-4 and cfg.batch_size == 64
    assert cfg.train_limit == 1000 and cfg.test_limit is None and cfg.dataset == "fashion_mnist"
    assert cfg.eval_every == 200 and cfg.train_size == 1000 and cfg.steps_per_epoch == 15
    assert parse_config("regression", {"points": "1000000", "optimizer": "adam"}).points == 1_000_000


def test_every_error_is_reported_at_once_with_its_fix():
    with pytest.raises(ConfigError) as err:
        parse_config("regression", {"points": 1, "lr": "-1", "steps": "ten", "optimizer": "rmsprop", "colour": 3})
    errors = err.value.errors
    assert set(errors) == {"points", "lr", "steps", "optimizer", "colour"}
    assert "at least 2" in errors["points"] and "e.g. 0.001" in errors["lr"] and "integer" in errors["steps"]
    assert "sgd, adam" in errors["optimizer"] and "not a setting" in errors["colour"]
    assert "--points" in str(err.value)  # the message names the CLI flag


@pytest.mark.parametrize(
    ("task", "raw", "field"),
    [
        ("regression", {"points": 50_000_001}, "points"),
        ("regression", {"noise": "nan"}, "noise"),
        ("regression", {"true_bias": "inf"}, "true_bias"),
        ("regression", {"log_every": 0}, "log_every"),
        ("regression", {"seed": 2**32}, "seed"),
        ("regression", {"steps": 2.5}, "steps"),
        ("mnist", {"dataset": "cifar10"}, "dataset"),
        ("mnist", {"hidden": "128,0"}, "hidden"),
        ("mnist", {"epochs": 0}, "epochs"),
        ("mnist", {"eval_every": -1}, "eval_every"),
        ("mnist", {"train_limit": 0}, "train_limit"),
        ("mnist", {"batch_size": 0}, "batch_size"),
        ("mnist", {"train_limit": 10, "batch_size": 32}, "batch_size"),
    ],
)
def test_invalid_values_name_their_field(task, raw, field):
    with pytest.raises(ConfigError) as err:
        parse_config(task, raw)
    assert field in err.value.errors


def test_unknown_task():
    with pytest.raises(ConfigError, match="unknown task"):
        parse_config("gan")


def test_round_trips_through_json():
    for cfg in (RegressionConfig(points=500, optimizer="adam"), MnistConfig(hidden=(64,), train_limit=2000)):
        d = json.loads(json.dumps(config_to_dict(cfg)))
        assert d["task"] == cfg.task
        assert config_from_dict(d) == cfg


def test_configs_are_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        RegressionConfig().lr = 1.0  # type: ignore[misc]
