"""W&B's own reader of an offline run, `wandb leet inspect`, without the CLI's Python start-up.

`wandb leet inspect [--summary] [--json] PATH` is a click command (wandb/cli/leet.py) that resolves PATH
(a .wandb file, a run folder or a wandb folder) and runs the `wandb-core leet inspect` binary with the
arguments it builds. Starting that Python CLI costs ~0.6 CPU s a call, the reader itself ~0.01 s, and the
suite reads back hundreds of runs. `inspect` builds the same arguments with wandb's own functions
(`_resolve_path`, `_base_args`, `_get_local_launch_args`) and runs the same binary, so what it prints is
the CLI's output byte for byte (tests/test_wandb_leet.py compares the two on a real offline run).

`finished_records` and `finished_summary` read a folder whose run was closed: `run.finish()` returns once
wandb-core has answered the exit, but wandb-core writes the .wandb file's tail (the buffered records, the
last history row, W&B's exit record) when it closes the run's stream after that, so a read at once can come
short on a loaded machine. They wait for the exit record, the file's last record.
"""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
import time
from pathlib import Path

WANDB_CLI = str(Path(sys.executable).with_name("wandb"))
EXIT_WAIT_S = 60.0  # longer than the W&B writer waits for finish (JAXDASH_WANDB_FINISH_TIMEOUT 30 s + 5)
POLL_S = 0.05


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


def records(path: str | Path) -> list[dict]:
    """Every record the .wandb file holds now (`inspect --json`), for a running or killed run too."""
    out = inspect(path, "--json")
    assert out.returncode == 0, f"wandb leet inspect --json {path}: {out.stderr.strip()}"
    return [json.loads(line) for line in out.stdout.splitlines() if line.strip()]


def finished_records(path: str | Path, timeout: float = EXIT_WAIT_S) -> list[dict]:
    """Every record of a closed run's .wandb file, once it holds W&B's exit record (at most `timeout` s)."""
    deadline = time.monotonic() + timeout
    while True:
        found = records(path)
        if any(r.get("type") == "exit" for r in found):
            return found
        if time.monotonic() >= deadline:
            kinds = [r.get("type") for r in found[-5:]]
            raise AssertionError(f"{path}: no exit record after {timeout:.0f} s (last records: {kinds})")
        time.sleep(POLL_S)  # wandb-core writes the rest when it closes the run's stream


def finished_summary(path: str | Path, timeout: float = EXIT_WAIT_S) -> dict:
    """`inspect --summary --json` of a closed run, read once its .wandb file holds the exit record."""
    finished_records(path, timeout)
    out = inspect(path, "--summary", "--json")
    assert out.returncode == 0, f"wandb leet inspect --summary --json {path}: {out.stderr.strip()}"
    return json.loads(out.stdout)
