"""A client run's console output: output.log in the run folder, bounded and rotated. No JAX, no Streamlit.

A script that calls `jaxdash.init` gets its stdout and stderr teed here (`jaxdash.console_capture`), as
W&B keeps a run's console in its files/output.log. The file is appended through `runstore.nofollow` (never
through a link planted in the folder); past `MAX_BYTES` it is renamed to output.log.1 (replacing an older
one) and a new output.log begins, so a run keeps at most twice MAX_BYTES of output: its newest lines.
"""

from __future__ import annotations

import os
from pathlib import Path

from runstore import nofollow, safe_files
from runstore.run_folder import OUTPUT, RunFolder
from runstore.run_folder import OUTPUT_ROTATED as ROTATED

MAX_BYTES = 4 << 20  # a file; the run keeps this much twice at most (output.log.1 and output.log)


class OutputLog:
    """Appends text to a run's output.log, rotating it at `max_bytes`; every write goes through `runstore.nofollow`."""

    def __init__(self, run_dir: Path, max_bytes: int = MAX_BYTES) -> None:
        self.run_dir, self.max_bytes = Path(run_dir), max(1, int(max_bytes))
        try:
            self._size = os.stat(
                RunFolder(self.run_dir).output_path, follow_symlinks=False
            ).st_size  # a resumed run goes on
        except OSError:
            self._size = 0

    def append(self, text: str) -> None:
        """Append `text` (a chunk longer than the limit keeps its end). Raises UnsafePath or OSError naming the file."""
        data = text.encode(errors="replace")
        if len(data) > self.max_bytes:
            data = data[-self.max_bytes :]
        if self._size and self._size + len(data) > self.max_bytes:
            nofollow.rename(self.run_dir, OUTPUT, ROTATED)
            self._size = 0
        nofollow.append(self.run_dir, OUTPUT, data)
        self._size += len(data)


def _end_of(path: Path, max_bytes: int) -> bytes:
    """The last `max_bytes` of a regular file (b"" when it is missing, a link or not regular)."""
    try:
        with safe_files.open_regular(path) as f:  # never through a link, never a FIFO
            size = f.seek(0, os.SEEK_END)
            f.seek(max(0, size - max_bytes))
            return f.read()
    except OSError:
        return b""


def has_output(run_dir: Path) -> bool:
    """Whether the run kept console output (output.log)."""
    return RunFolder(run_dir).output_path.exists()


def tail(run_dir: Path, lines: int = 200, max_bytes: int = 64 << 10) -> str | None:
    """The last `lines` lines of the run's console output (output.log, after output.log.1 when it is short),
    reading at most `max_bytes` of each; a progress bar's \\r rewrites show as the terminal would. None
    without output.log."""
    folder = RunFolder(run_dir)
    if not has_output(folder.path):
        return None
    data = _end_of(folder.output_path, max_bytes)
    if data.count(b"\n") < lines and len(data) < max_bytes:
        data = _end_of(folder.output_rotated_path, max_bytes - len(data)) + data
    if len(data) >= max_bytes and b"\n" in data:
        data = data[data.index(b"\n") + 1 :]  # the first line is cut: drop it
    text = data.decode(errors="replace").replace("\r\n", "\n").rstrip("\n")
    shown = [line.rsplit("\r", 1)[-1] for line in text.split("\n")]
    return "\n".join(shown[-lines:])
