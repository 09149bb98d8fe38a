"""Configs by task name: the page and the CLI validate raw values here (see settings.fields).

`parse_config("mnist", {"lr": "3e-4"})` reads the task's settings (built-in name or "module:Class"
spec; settings.registry.task_settings, no model code for the built-ins) and parses its Config; every
problem comes back at once in one ConfigError, each naming its field. No JAX here: the page imports it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from settings.fields import ConfigError, FieldInfo, config_to_dict, fields
from settings.fields import parse_config as parse_fields
from settings.registry import available, task_settings

__all__ = ["ConfigError", "FieldInfo", "config_class", "config_fields", "config_to_dict", "parse_config", "available"]


def config_class(task: str) -> type:
    """The Config dataclass of `task`."""
    return task_settings(task).Config


def config_fields(task: str) -> list[FieldInfo]:
    """The fields of `task`'s config with their labels, help, bounds and choices (what a form draws)."""
    return fields(config_class(task))


def parse_config(task: str, raw: Mapping[str, Any] | None = None) -> Any:
    """A validated config of `task` from raw values; ConfigError lists every bad field."""
    settings = task_settings(task)
    return parse_fields(settings.Config, raw, settings.name)
