"""W&B calls with no local meaning, accepted with one notice naming the call: `login`, `watch`, `unwatch`,
`teardown`. The dashboard needs no account; `login` still tells W&B's copy where to log when a key is given."""

from __future__ import annotations

from typing import Any

from jaxdash.notices import notice


def login(key: str | None = None, relogin: bool | None = None, host: str | None = None, **kwargs: Any) -> bool:
    """`wandb.login`: nothing to log in to here; with `key`, the W&B copy (logged by the writer process
    through W&B itself) uses it from now on (`WANDB_API_KEY`, `WANDB_BASE_URL`). Returns True."""
    import os

    if key:
        os.environ["WANDB_API_KEY"] = str(key)
    if host:
        os.environ["WANDB_BASE_URL"] = str(host)
    notice("login", "login(): the dashboard needs no account; W&B's copy uses W&B's own credentials")
    return True


def watch(*args: Any, **kwargs: Any) -> None:
    """`wandb.watch`: hooks PyTorch modules; with JAX, log the arrays you want (e.g. params) instead."""
    from jaxdash import session

    run = session.current()
    if run is not None and hasattr(run, "watch"):
        run.watch(*args, **kwargs)
    else:
        notice("watch", "watch() hooks PyTorch modules; with JAX, log the arrays you want (e.g. params) instead")


def unwatch(*args: Any, **kwargs: Any) -> None:
    """`wandb.unwatch`: nothing was watched."""


def teardown(exit_code: int | None = None) -> None:
    """`wandb.teardown`: finish the current run, if any."""
    from jaxdash import session

    session.finish(exit_code)
