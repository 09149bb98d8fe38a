"""The tail of a run's process output (process.log, written when the page launched the run). No Streamlit."""

from __future__ import annotations

import os
from pathlib import Path

from runstore import safe_files
from runstore.run_folder import RunFolder


def tail(run_dir: Path, lines: int = 200, max_bytes: int = 64 << 10) -> str | None:
    """The last `lines` lines of process.log (reading at most `max_bytes` from its end); None without a log.

    A run started from the command line has no process.log: its output went to that terminal.
    """
    path = RunFolder(run_dir).log_path
    try:
        with safe_files.open_regular(path) as f:  # never through a link, never a FIFO
            size = f.seek(0, os.SEEK_END)
            f.seek(max(0, size - max_bytes))
            data = f.read()
    except OSError:
        return None
    if len(data) == max_bytes and b"\n" in data:
        data = data[data.index(b"\n") + 1 :]  # the first line is cut: drop it
    text = data.decode(errors="replace").replace("\r\n", "\n").rstrip("\n")
    # A progress bar rewrites its line with \r: keep what the terminal would show.
    shown = [ln.rsplit("\r", 1)[-1] for ln in text.split("\n")]
    return "\n".join(shown[-lines:])


def last_lines(run_dir: Path, lines: int = 3) -> str:
    """The last non-empty lines of process.log (a run that died before it could write its status)."""
    return "\n".join([ln for ln in (tail(run_dir, 200) or "").splitlines() if ln.strip()][-lines:])
