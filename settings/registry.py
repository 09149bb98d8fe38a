"""The task registry: the built-in tasks, installed packages' and the user's own, found by name or spec.

A task is named by a short name or a spec:

* a built-in name: `regression`, `mnist`;
* `package.module:Class`: any importable module (e.g. your package, installed or on PYTHONPATH);
* `path/to/file.py:Class`: a file, imported by path;
* installed packages can also register names in the `jaxdash.tasks` entry-point group.

The page lists the built-ins, the entry points and every spec in `$JAXDASH_TASKS` (comma-separated).
config.json stores the spec, so a run resumes with the task it started with.

A spec names either a Task subclass or a `TaskSettings` (settings/task.py): a task's names,
config and panels declared in a module that imports no JAX, naming its Task class by spec. The
page asks `task_settings` and so never imports JAX for the built-ins, whose specs name their
`settings.<task>:SETTINGS`; a spec naming a Task class is imported in the page's process the first
time the page lists it (its title, then its form). Training asks `load_task`, which follows a
TaskSettings to its class. No JAX here: the page imports it; training.tasks adds `load_task`.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import os
import sys
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

from settings.fields import ConfigError
from settings.task import TaskDeclaration, TaskSettings

BUILTIN = {  # settings only: the page lists these without importing JAX
    "regression": "settings.regression:SETTINGS",
    "mnist": "settings.mnist:SETTINGS",
}
ENTRY_POINT_GROUP = "jaxdash.tasks"


def available() -> dict[str, str]:
    """name or spec -> spec of every task the page offers (built-ins, entry points, $JAXDASH_TASKS)."""
    found = dict(BUILTIN)
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        found.setdefault(ep.name, ep.value)
    for spec in filter(None, (s.strip() for s in os.environ.get("JAXDASH_TASKS", "").split(","))):
        found.setdefault(spec, spec)
    return found


def _import_module(module: str):
    if module.endswith(".py") or "/" in module:
        path = Path(module).resolve()
        name = f"jaxdash_user_{path.stem}"
        if name in sys.modules:
            return sys.modules[name]
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None or not path.is_file():
            raise FileNotFoundError(f"no Python file {path}")
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
        return mod
    return importlib.import_module(module)


def canonical_spec(name_or_spec: str) -> str:
    """The spec to store with a run: a file spec's path made absolute, so resume works from any folder."""
    module, sep, cls_name = name_or_spec.partition(":")
    if sep and (module.endswith(".py") or "/" in module):
        return f"{Path(module).resolve()}:{cls_name}"
    return name_or_spec


def _is_file(module: str) -> bool:
    return module.endswith(".py") or "/" in module


def resolve(name_or_spec: str) -> tuple[str, Any]:
    """(spec, the object it names); ConfigError naming the task and the fix when there is none."""
    spec = available().get(name_or_spec, name_or_spec)
    module, sep, attr = spec.partition(":")
    if not sep or not attr:
        names = ", ".join(k for k in available() if ":" not in k)
        raise ConfigError({"task": f"unknown task {name_or_spec!r}; use one of {names} or package.module:Class."})
    try:
        return spec, getattr(_import_module(module), attr)
    except (ImportError, FileNotFoundError, AttributeError) as exc:
        raise ConfigError({"task": f"cannot load task {spec!r}: {type(exc).__name__}: {exc}"}) from None


def task_spec_of(settings: TaskSettings, spec: str) -> str:
    """settings.task, a relative file path in it read from the folder of the module that declares `settings`."""
    task_module, _, cls_name = settings.task.partition(":")
    if not _is_file(task_module) or Path(task_module).is_absolute():
        return settings.task
    module = spec.partition(":")[0]
    where = Path(module).resolve() if _is_file(module) else Path(getattr(sys.modules[module], "__file__", None) or ".")
    return f"{where.parent / task_module}:{cls_name}"


def task_settings(name_or_spec: str) -> TaskSettings:
    """The names, config class and panels of a task, without importing its model where it declares them apart.

    Raises:
      ConfigError: naming the task, with the fix (an unknown name, a missing module, neither a Task nor settings).
    """
    spec, found = resolve(name_or_spec)
    if isinstance(found, TaskSettings):
        return dataclasses.replace(found, task=task_spec_of(found, spec))
    if isinstance(found, type) and issubclass(found, TaskDeclaration):
        return TaskSettings.of(found)
    raise ConfigError({"task": f"{spec!r} is neither a subclass of jaxdash.Task nor a jaxdash.TaskSettings."})
