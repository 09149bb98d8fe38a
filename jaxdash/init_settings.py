"""`wandb.Settings` and how `init`'s arguments, a Settings object and the `WANDB_*` variables combine.

Precedence as in W&B (`wandb_init.init`): an explicit `init` argument, else the Settings object's
field, else the environment variable W&B reads, else the default. The result reaches our run folder
(config.json, the page) and the W&B copy alike.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

# init argument -> (wandb.Settings field, environment variable)
SOURCES = {
    "project": ("project", "WANDB_PROJECT"),
    "entity": ("entity", "WANDB_ENTITY"),
    "name": ("run_name", "WANDB_NAME"),
    "notes": ("run_notes", "WANDB_NOTES"),
    "tags": ("run_tags", "WANDB_TAGS"),
    "group": ("run_group", "WANDB_RUN_GROUP"),
    "job_type": ("run_job_type", "WANDB_JOB_TYPE"),
    "id": ("run_id", "WANDB_RUN_ID"),
    "resume": ("resume", "WANDB_RESUME"),
    "mode": ("mode", "WANDB_MODE"),
    "dir": ("root_dir", "WANDB_DIR"),
    "reinit": ("reinit", None),
}
_MODES = {"dryrun": "offline", "run": "online", "shared": "online"}


class Settings:
    """`wandb.Settings(...)`: every keyword is accepted and read back as an attribute (unset ones are None).

    Those with a meaning here are the run's (project, entity, run_name, run_notes, run_tags, run_group,
    run_job_type, run_id, resume, mode, root_dir, reinit); the rest (console, silent, init_timeout, ...)
    concern W&B's own service and are kept only to be read back.
    """

    def __init__(self, **kwargs: Any) -> None:
        self.__dict__.update(kwargs)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return None

    def update(self, settings: Mapping[str, Any] | Settings | None = None, **kwargs: Any) -> None:
        """Set fields from a dict, another Settings or keywords."""
        other = settings.to_dict() if isinstance(settings, Settings) else dict(settings or {})
        self.__dict__.update({**other, **kwargs})

    def to_dict(self) -> dict[str, Any]:
        """The fields set."""
        return dict(self.__dict__)

    def __repr__(self) -> str:
        return f"Settings({', '.join(f'{k}={v!r}' for k, v in self.__dict__.items())})"


@dataclass
class InitArgs:
    """`init`'s run arguments after the Settings object and the environment had their say."""

    project: str | None = None
    entity: str | None = None
    name: str | None = None
    notes: str | None = None
    tags: tuple[str, ...] = ()
    group: str | None = None
    job_type: str | None = None
    id: str | None = None  # noqa: A003 - W&B's name
    resume: Any = None
    mode: str | None = None
    dir: str | None = None  # noqa: A003 - W&B's name
    reinit: Any = None
    from_env: dict[str, str] = field(default_factory=dict)  # argument -> the variable that gave it
    console: bool = True  # the script's stdout and stderr kept (jaxdash.console_capture.enabled)
    stats_s: float | None = None  # seconds between system-metrics samples; None: off (jaxdash.system_watch)
    # init's own arguments, not W&B's (jaxdash.session.init says what each means)
    runs_root: str | os.PathLike | None = None
    tensorboard: bool | None = None
    wandb: str = "auto"
    total_steps: int | None = None
    fork_from: str | None = None


def resolve(given: Mapping[str, Any], settings: Any) -> InitArgs:
    """Each run argument from `given` (explicit `init` arguments, None when left out), else `settings`
    (a Settings or a dict), else its `WANDB_*` variable."""
    fields = settings.to_dict() if isinstance(settings, Settings) else dict(settings or {})
    if settings is not None and not isinstance(settings, (Settings, Mapping)):  # a real wandb.Settings
        fields = {k: getattr(settings, k, None) for k, _ in SOURCES.values()}
    out = InitArgs()
    for arg, (setting, var) in SOURCES.items():
        value = given.get(arg)
        if value is None:
            value = fields.get(setting)
        if value is None and var and os.environ.get(var, "").strip():
            value = os.environ[var].strip()
            out.from_env[arg] = var
        setattr(out, arg, value)
    out.tags = _tags(out.tags)
    if isinstance(out.mode, str):
        out.mode = _MODES.get(out.mode.strip().lower(), out.mode.strip().lower())
    if isinstance(out.resume, str) and out.resume.lower() in ("true", "false"):
        out.resume = out.resume.lower() == "true"
    for arg in ("project", "entity", "name", "notes", "group", "job_type", "id", "dir"):
        value = getattr(out, arg)
        setattr(out, arg, str(value) if value is not None and str(value) != "" else None)
    return out


def _tags(tags: Any) -> tuple[str, ...]:
    if tags is None:
        return ()
    if isinstance(tags, str):
        tags = tags.split(",")
    return tuple(dict.fromkeys(str(t).strip() for t in tags if str(t).strip()))


def explicit(settings: Any, name: str) -> Any:
    """The field `name` of `init`'s settings (a Settings, a dict or a real `wandb.Settings`) when the script set
    it, else None (a real wandb.Settings gives every field a default: only the ones set count)."""
    if settings is None:
        return None
    if isinstance(settings, Settings):
        return settings.to_dict().get(name)
    if isinstance(settings, Mapping):
        return settings.get(name)
    fields_set = getattr(settings, "model_fields_set", None)
    return getattr(settings, name, None) if fields_set is None or name in fields_set else None
