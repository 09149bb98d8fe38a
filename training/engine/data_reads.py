"""Which config fields a task's `load_data` reads: members whose data differ get their own data.

A population shares one copy of the data unless the task says otherwise (`per_member_data`). A
task that draws its data from `cfg.seed` but does not say so would train every member on member
0's data, silently. So member 0's `load_data` runs on a config that records the fields it reads;
when the members differ in any of them, each member loads its own data, whatever the task declares.
(A value copied from the config in `__init__` and used in `load_data` is not seen: such a task
still sets `per_member_data`.)
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence
from typing import Any

log = logging.getLogger(__name__)


def recording_config(cfg: Any, seen: set[str]) -> Any:
    """A copy of the frozen config `cfg`, of a subclass of its type, that adds to `seen` each field read."""
    names = {f.name for f in dataclasses.fields(cfg)}

    class Recording(type(cfg)):  # type: ignore[misc, valid-type]
        def __getattribute__(self, name: str) -> Any:
            if name in names:
                seen.add(name)
            return super().__getattribute__(name)

    Recording.__name__ = Recording.__qualname__ = type(cfg).__name__
    init = {f.name: getattr(cfg, f.name) for f in dataclasses.fields(cfg) if f.init}
    return Recording(**init)


def load_recording(task: Any) -> tuple[Any, set[str]]:
    """`task.load_data()` and the names of the config fields it read."""
    cfg, seen = task.cfg, set()
    task.cfg = recording_config(cfg, seen)
    try:
        return task.load_data(), seen
    finally:
        task.cfg = cfg


def varied_reads(cfgs: Sequence[Any], read: set[str]) -> list[str]:
    """The fields `load_data` read whose values differ between members (sorted)."""
    return sorted(n for n in read if any(getattr(c, n) != getattr(cfgs[0], n) for c in cfgs[1:]))


def load_members_data(tasks: Sequence[Any], stacked: bool) -> tuple[list[Any], bool]:
    """([one Data shared by all] or [one per member], per member?) for the tasks of a run's members."""
    first, read = load_recording(tasks[0])
    if not stacked:
        return [first], False
    declared = bool(type(tasks[0]).per_member_data)
    varied = varied_reads([t.cfg for t in tasks], read)
    if varied and not declared:
        log.info("load_data reads %s, which the members vary: each member loads its own data.", ", ".join(varied))
    if not (declared or varied):
        return [first], False
    return [first, *(t.load_data() for t in tasks[1:])], True
