"""One line for each W&B call or argument that has no meaning here (`entity`, `anonymous`, `watch`, ...),
said once per process, W&B's terminal helpers (`termlog`, `termwarn`, `termerror`), and the one line a run's
message keeps of an exception (`one_line`)."""

from __future__ import annotations

import logging
import os
import sys

logger = logging.getLogger("jaxdash")
_SAID: set[str] = set()


def notice(key: str, message: str) -> None:
    """Say `message` once per `key` (a warning on the "jaxdash" logger)."""
    if key not in _SAID:
        _SAID.add(key)
        logger.warning("jaxdash: %s", message)


def one_line(exc: BaseException | None) -> str:
    """The last line of "Type: message" of `exc` (where Python's own message ends), at most 500 characters."""
    text = f"{type(exc).__name__}: {exc}" if exc is not None else ""
    return (text.strip().splitlines() or [""])[-1][:500]


def _silent() -> bool:
    return os.environ.get("WANDB_SILENT", "").lower() in ("1", "true", "yes")


def termlog(string: str = "", newline: bool = True, repeat: bool = True, prefix: bool = True) -> None:
    """`wandb.termlog`: a line on stderr prefixed "jaxdash: " (nothing under WANDB_SILENT)."""
    if _silent() or (not repeat and f"log:{string}" in _SAID):
        return
    _SAID.add(f"log:{string}")
    print(("jaxdash: " if prefix else "") + str(string), end="\n" if newline else "", file=sys.stderr, flush=True)


def termwarn(string: str, newline: bool = True, repeat: bool = True, prefix: bool = True) -> None:
    """`wandb.termwarn`: a "WARNING" line on stderr."""
    termlog(f"WARNING {string}", newline=newline, repeat=repeat, prefix=prefix)


def termerror(string: str, newline: bool = True, repeat: bool = True, prefix: bool = True) -> None:
    """`wandb.termerror`: an "ERROR" line on stderr."""
    termlog(f"ERROR {string}", newline=newline, repeat=repeat, prefix=prefix)
