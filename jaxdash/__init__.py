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
"""

from __future__ import annotations

from typing import Any

from jaxdash.cli import main, train
from jaxdash.client import Run
from jaxdash.data_api import *  # noqa: F403 - W&B's data types, plots, artifacts, save, alert
from jaxdash.data_api import __all__ as _data_names
from jaxdash.extras import login, teardown, unwatch, watch
from jaxdash.notices import termerror, termlog, termwarn
from jaxdash.session import define_metric, finish, init, log
from jaxdash.settings import Settings
from jaxdash.wandb_config import Config, ConfigError
from training.data import load_dataset

__all__ = [
    "Run", "init", "log", "finish", "define_metric", "load_dataset", "main", "train", "run", "config", "summary",  # noqa: F405
    "Settings", "Config", "ConfigError", "login", "teardown", "watch", "unwatch", "termlog", "termwarn", "termerror",
    *_data_names,
]  # fmt: skip


def __getattr__(name: str) -> Any:
    """`jaxdash.run`, `jaxdash.config` and `jaxdash.summary` of the current run, as wandb offers them.

    Before `init` (or after `finish`), `config` and `summary` are empty objects a script may still read.
    """
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
