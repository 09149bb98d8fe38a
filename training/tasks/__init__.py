"""Finding tasks: the built-in ones, installed packages' and the user's own.

A task is named by a short name or a spec:

* a built-in name: `regression`, `mnist`;
* `package.module:Class`: any importable module (e.g. your package, installed or on PYTHONPATH);
* `path/to/file.py:Class`: a file, imported by path;
* installed packages can also register names in the `jaxdash.tasks` entry-point group.

The page lists the built-ins, the entry points and every spec in `$JAXDASH_TASKS` (comma-separated).
config.json stores the spec, so a run resumes with the task it started with.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from importlib.metadata import entry_points
from pathlib import Path

from training.settings import ConfigError
from training.tasks.base import Task

BUILTIN = {
    "regression": "training.tasks.regression:RegressionTask",
    "mnist": "training.tasks.mnist:MnistTask",
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


def load_task(name_or_spec: str) -> type[Task]:
    """The Task class named by a built-in name, an entry-point name or a "module:Class" spec.

    Raises:
      ConfigError: naming the task, with the fix (an unknown name, a missing module or class).
    """
    spec = available().get(name_or_spec, name_or_spec)
    module, sep, cls_name = spec.partition(":")
    if not sep or not cls_name:
        names = ", ".join(k for k in available() if ":" not in k)
        raise ConfigError({"task": f"unknown task {name_or_spec!r}; use one of {names} or package.module:Class."})
    try:
        cls = getattr(_import_module(module), cls_name)
    except (ImportError, FileNotFoundError, AttributeError) as exc:
        raise ConfigError({"task": f"cannot load task {spec!r}: {type(exc).__name__}: {exc}"}) from None
    if not (isinstance(cls, type) and issubclass(cls, Task)):
        raise ConfigError({"task": f"{spec!r} is not a subclass of training.tasks.base.Task."})
    return cls
