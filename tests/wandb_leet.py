"""W&B's own reader of an offline run, `wandb leet inspect`, without the CLI's Python start-up.

`wandb leet inspect [--summary] [--json] PATH` is a click command (wandb/cli/leet.py) that resolves PATH
(a .wandb file, a run folder or a wandb folder) and runs the `wandb-core leet inspect` binary with the
arguments it builds. Starting that Python CLI costs ~0.6 CPU s a call, the reader itself ~0.01 s, and the
suite reads back hundreds of runs. `inspect` builds the same arguments with wandb's own functions
(`_resolve_path`, `_base_args`, `_get_local_launch_args`) and runs the same binary, so what it prints is
the CLI's output byte for byte (tests/test_wandb_leet.py compares the two on a real offline run).
"""

from __future__ import annotations

import contextlib
import io
import subprocess
import sys
from pathlib import Path

WANDB_CLI = str(Path(sys.executable).with_name("wandb"))


def inspect_args(path: str | Path, *flags: str) -> list[str]:
    """The command line `wandb leet inspect FLAGS PATH` runs (flags: "--json", "--summary")."""
    from wandb.cli import leet

    args = leet._base_args("inspect")
    args.extend(flag for flag in ("--summary", "--json", "--follow") if flag in flags)
    return args + leet._get_local_launch_args(leet._resolve_path(str(path)))


def inspect(path: str | Path, *flags: str, timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
    """Run `wandb leet inspect FLAGS PATH` as the CLI does; a PATH the CLI refuses gives its exit code 1 and message."""
    unknown = set(flags) - {"--summary", "--json", "--follow"}
    if unknown:
        raise ValueError(
            f"wandb_leet.inspect: unknown flags {sorted(unknown)} (the CLI takes --summary, --json, --follow)"
        )
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            args = inspect_args(path, *flags)
    except SystemExit as exc:  # the CLI's _fatal: "Error: Path does not exist: ..."
        return subprocess.CompletedProcess(
            [WANDB_CLI, "leet", "inspect", *flags, str(path)], int(exc.code or 1), "", err.getvalue()
        )
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout, close_fds=True)
