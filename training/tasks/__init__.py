"""Loading a task's model: the Task class a name or spec points to (settings.registry finds the names).

`load_task` follows a `TaskSettings` (what the page reads, no JAX) to the Task class it names by spec, and
imports it with its model code. The registry itself (built-ins, entry points, $JAXDASH_TASKS, file specs)
is settings/registry.py.
"""

from __future__ import annotations

from settings.fields import ConfigError
from settings.registry import resolve, task_spec_of
from settings.task import TaskSettings
from training.tasks.base import Task


def load_task(name_or_spec: str) -> type[Task]:
    """The Task class named by a built-in name, an entry-point name or a "module:Class" spec (imports its model).

    Raises:
      ConfigError: naming the task, with the fix (an unknown name, a missing module or class).
    """
    spec, found = resolve(name_or_spec)
    if isinstance(found, TaskSettings):
        spec, found = resolve(task_spec_of(found, spec))
    if not (isinstance(found, type) and issubclass(found, Task)):
        raise ConfigError({"task": f"{spec!r} is not a subclass of training.tasks.base.Task."})
    return found
