"""jaxdash: track any JAX training loop live on the dashboard, and the console scripts.

    import jaxdash
    run = jaxdash.init(project="mnist", config={"lr": 1e-3})
    for step in range(steps):
        state, loss = train_step(state, batch)    # a jitted step: `loss` is a device array
        run.log({"train/loss": loss})             # returns at once; never waits for the device
        if run.should_stop():                     # the page's Stop button
            break
    run.finish()

The common wandb subset works as `import jaxdash as wandb`: init, log, finish, config, summary,
define_metric, Image, Table (and plotly figures in `log`). `run.log_chunk` logs the metrics a
`lax.scan` returned, one record per step. `load_dataset("mnist" | "fashion_mnist")` gives the
dashboard's own data as NumPy arrays. Nothing here imports JAX until a run logs a JAX array.
"""

from __future__ import annotations

from typing import Any

from jaxdash.cli import main, train
from jaxdash.client import Run
from jaxdash.media import Image, Table
from jaxdash.session import define_metric, finish, init, log
from training.data import load_dataset

__all__ = [
    "Run", "init", "log", "finish", "define_metric", "Image", "Table", "load_dataset",
    "main", "train", "run", "config", "summary",
]  # fmt: skip


def __getattr__(name: str) -> Any:
    """`jaxdash.run`, `jaxdash.config` and `jaxdash.summary` of the current run, as wandb offers them."""
    from jaxdash import session

    if name == "run":
        return session.current()
    if name in ("config", "summary"):
        current = session.current()
        return getattr(current, name) if current is not None else {}
    raise AttributeError(f"module 'jaxdash' has no attribute {name!r}")
