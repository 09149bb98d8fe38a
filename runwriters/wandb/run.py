"""Start and finish one W&B run for `WandbWriter`, without ever raising into or stalling training.

* `init_run` is `wandb.init` with our settings (console captured, init and finish timeouts, a short
  transaction-log flush) and the step metrics; it returns an error string instead of raising.
  The writer calls it from its background thread and retries offline after an online failure,
  `teardown` first.
* `run_info` is what the page shows of the run: its folder, project, id and URL (online) or the
  `wandb sync` command of every offline folder of the run (offline).
* `finish_run` finishes in a thread with a timeout, so a slow upload cannot hang the run.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from runstore import run_states
from runstore.env_numbers import env_number_or_default
from runwriters.wandb import mode as wandb_mode

log = logging.getLogger(__name__)

EXIT_CODES = run_states.EXIT_CODES
_FLUSH_SETTING = "x_transaction_log_flush_interval"


def env_timeout(var: str, default: float) -> float:
    """Seconds from $var (read per run, so a test or the page can shorten it), else `default`."""
    return env_number_or_default(var, default, minimum=0)


def teardown() -> None:
    """Shut the wandb service down, best effort (before retrying offline)."""
    try:
        import wandb

        wandb.teardown()
    except Exception:  # noqa: BLE001, S110 - nothing left to clean up
        pass


# A process that relays another process's console into its runs (jaxdash's writer process, jaxdash/sink.py) sets
# this False: W&B's console capture stays on (wandb-core then writes the run's files/output.log from the output
# records it gets) but its wrap of this process's own stdout and stderr is taken off right after init.
OWN_CONSOLE = True


def init_run(
    mode: str,
    cfg_dict: Mapping[str, Any],
    kwargs: Mapping[str, Any],
    finish_timeout: float,
    console: str | None = None,
) -> tuple[Any, str | None]:
    """Start the run: (run, None), or (None, an error string) instead of raising.

    `console`: W&B's console capture; None: $WANDB_CONSOLE, else "wrap" (the Logs tab shows the process's output).
    """
    try:
        import wandb

        settings = wandb.Settings(
            init_timeout=env_timeout("JAXDASH_WANDB_INIT_TIMEOUT", 15.0),
            console=console or os.environ.get("WANDB_CONSOLE") or "wrap",
            silent=True,
            finish_timeout=finish_timeout,
            # wandb-core flushes the .wandb file every 15 s and not when the trainer is killed: that buffer
            # is what a kill -9 loses. 0.1 s instead (an x_ setting: passed only if this version has it).
            **({_FLUSH_SETTING: 0.1} if _FLUSH_SETTING in wandb.Settings.model_fields else {}),
        )
        kwargs = {k: v for k, v in kwargs.items() if v is not None}
        run = wandb.init(config=dict(cfg_dict), mode=mode, reinit="create_new", settings=settings, **kwargs)
        if not OWN_CONSOLE:
            _unwrap_console(run)
        run.define_metric("global_step", hidden=True)
        run.define_metric("epoch", step_metric="global_step")
        return run, None
    except Exception as exc:  # noqa: BLE001 - any init failure disables W&B, never the run
        return None, f"{type(exc).__name__}: {exc}"


def _unwrap_console(run: Any) -> None:
    """Take W&B's wrap off this process's stdout and stderr (its `_out_redir`, `_err_redir`), best effort."""
    for name in ("_out_redir", "_err_redir"):
        redirect = getattr(run, name, None)
        try:
            if redirect is not None:
                redirect.uninstall()
        except Exception as exc:  # noqa: BLE001 - private API moved: this process's output may reach the Logs
            log.debug("W&B console wrap not removed (%s)", exc)


# The training process imports pandas at W&B's init, not mid-run. jaxdash's sink (a process of its own at idle
# priority, jaxdash/sink.py) turns this off: a run that logs no table or figure never needs pandas (~0.4 CPU s).
PRELOAD_PANDAS = True


def preload_pandas() -> None:
    """wandb imports pandas (if installed) at the first table or figure, ~0.3 s: now, not mid-run."""
    if PRELOAD_PANDAS and importlib.util.find_spec("pandas") is not None:
        import pandas  # noqa: F401


def run_info(run: Any, run_dir: Path, mode: str) -> dict[str, Any]:
    """The run's folder, project, id, and its URL (online) or `wandb sync` command (offline)."""
    sync_dir = str(getattr(run.settings, "sync_dir", "") or "")
    info = {"dir": sync_dir, "project": run.project, "id": run.id, "url": None}
    if mode == "online":
        info["url"] = run.url
    else:
        # A resumed run has one offline folder per process, all with the same id; `wandb sync`
        # uploads them in start-time order into one run.
        folders = [str(p) for p in wandb_mode.run_folders(run_dir, run.id) if p.name.startswith("offline-")] or [
            sync_dir
        ]
        info["sync_command"] = "wandb sync " + " ".join(folders)
    return info


def finish_run(run: Any, state: str, finish_timeout: float, where: str | None) -> None:
    """`run.finish` with the exit code of `state`, waiting at most `finish_timeout` + 5 s."""
    t = threading.Thread(target=run.finish, kwargs={"exit_code": EXIT_CODES.get(state, 1)}, daemon=True)
    t.start()
    t.join(finish_timeout + 5)
    if t.is_alive():
        log.warning("W&B finish still running after %.0fs; not waiting (run: %s).", finish_timeout + 5, where)
