"""jaxdash: track any JAX training loop live on the dashboard, and the console scripts.

    import jaxdash
    run = jaxdash.init(project="mnist", config={"lr": 1e-3})
    for step in range(steps):
        state, loss = train_step(state, batch)    # a jitted step: `loss` is a device array
        run.log({"train/loss": loss})             # returns at once; never waits for the device
        if run.should_stop():                     # the page's Stop button
            break
    run.finish()

W&B scripts run unchanged with `import jaxdash as wandb`: `init` (every argument), `log` (W&B's step
rules), `finish` (also at exit), `config`, `summary`, `define_metric`, `Settings`, the data types
and `wandb.plot`, artifacts, `save`, `alert`, `login`, `watch`, `termlog`. `run.log_chunk` logs the
metrics a `lax.scan` returned, one record per step. `load_dataset("mnist" | "fashion_mnist")` gives
the dashboard's own data as NumPy arrays. Nothing here imports JAX until a run logs a JAX array.

The Task API, for a task the engine trains (README "Add your own task"): `Task`, `Data`, the configs
`StepsConfig` / `EpochsConfig` / `BaseConfig` with `setting` and `with_default`, `TaskSettings`
(a task's settings declared without its model, so the page imports no JAX), and the summaries
`FitSummary`, `ClassificationSummary`, `FigureSummary`, `ImageSummary` with `subsample`. They are
loaded on first use, so `import jaxdash` stays light for a script that only logs.
"""

from __future__ import annotations

from typing import Any

from jaxdash.cli import main, train
from jaxdash.client import Run
from jaxdash.data_api import *  # noqa: F403 - W&B's data types, plots, artifacts, save, alert
from jaxdash.data_api import __all__ as _data_names
from jaxdash.extras import login, teardown, unwatch, watch
from jaxdash.init_settings import Settings
from jaxdash.notices import termerror, termlog, termwarn
from jaxdash.public_api import Api
from jaxdash.session import define_metric, finish, init, log
from jaxdash.wandb_config import Config, ConfigError
from training.data import load_dataset

# name -> the module that defines it, imported on first use (training.tasks.summaries pulls in the writers)
_TASK_API = {
    **dict.fromkeys(("Task", "Data"), "training.tasks.base"),
    **dict.fromkeys(("BaseConfig", "StepsConfig", "EpochsConfig", "TaskSettings"), "settings.task"),
    **dict.fromkeys(("setting", "with_default"), "settings.fields"),
    **dict.fromkeys(
        ("FitSummary", "ClassificationSummary", "FigureSummary", "ImageSummary", "subsample"),
        "training.tasks.summaries",
    ),
}

__all__ = [
    "Run", "Api", "init", "log", "finish", "define_metric", "load_dataset", "main", "train", "run", "config", "summary",  # noqa: F405
    "Settings", "Config", "ConfigError", "login", "teardown", "watch", "unwatch", "termlog", "termwarn", "termerror",
    *_data_names,
    *_TASK_API,
]  # fmt: skip


def __getattr__(name: str) -> Any:
    """`jaxdash.run`, `jaxdash.config` and `jaxdash.summary` of the current run, as wandb offers them; the Task API.

    Before `init` (or after `finish`), `config` and `summary` are empty objects a script may still read.
    """
    if name in _TASK_API:
        import importlib

        return getattr(importlib.import_module(_TASK_API[name]), name)
    from jaxdash import session

    if name == "run":
        return session.current()
    if name in ("config", "summary"):
        current = session.current()
        if current is not None:
            return getattr(current, name)
        from jaxdash.wandb_summary import Summary

        return Config() if name == "config" else Summary(dict, lambda: None)
    raise AttributeError(f"module 'jaxdash' has no attribute {name!r}")
