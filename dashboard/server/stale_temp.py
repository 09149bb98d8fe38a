"""Remove the plotly.js copies that servers before #36 left in the temporary folder.

Each server used to copy plotly.js (5.8 MB) into a `jaxdash-chart-*` folder it removed at exit,
which a SIGTERM or kill skipped: 60 of them on one machine. Servers now serve plotly.js where it
lies (dashboard/panels/inplace_chart.py) and make none; at start, a server removes the folders of
servers that are gone. The folder names hold no pid, so a folder is kept while any Streamlit
process of this user that started before the folder was made still runs (it may be its owner).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import psutil

PREFIX = "jaxdash-chart-"
FILES = frozenset({"index.html", "plotly.min.js", "plotly-basic.min.js"})  # what such a folder held, nothing else


def live_server_starts() -> list[float]:
    """Start times of this user's running processes that run Streamlit, this one excepted."""
    starts = []
    for proc in psutil.process_iter(["pid", "uids", "cmdline", "create_time"]):
        info = proc.info
        if info["pid"] == os.getpid() or not info["uids"] or info["uids"].real != os.getuid():
            continue
        if any("streamlit" in part for part in info["cmdline"] or ()):
            starts.append(info["create_time"])
    return starts


def _ours(folder: Path) -> bool:
    """A real folder of this user's that holds some of FILES, as regular files, and nothing else."""
    try:
        st = folder.lstat()
        entries = list(os.scandir(folder)) if folder.is_dir() and not folder.is_symlink() else []
    except OSError:
        return False
    return (
        st.st_uid == os.getuid()
        and bool(entries)
        and all(e.name in FILES and e.is_file(follow_symlinks=False) for e in entries)
    )


def leftovers(tmpdir: Path, starts: list[float]) -> list[Path]:
    """The `jaxdash-chart-*` folders under `tmpdir` no process started at `starts` (seconds) can own."""
    out = []
    for folder in sorted(tmpdir.glob(PREFIX + "*")):
        try:
            made = folder.lstat().st_mtime  # its files were copied in as it was made
        except OSError:
            continue
        if _ours(folder) and not any(start <= made + 1 for start in starts):
            out.append(folder)
    return out


def remove_leftovers(tmpdir: Path | None = None) -> int:
    """Remove the leftovers under `tmpdir` (the temporary folder); returns how many. Never raises."""
    try:
        found = leftovers(Path(tmpdir or tempfile.gettempdir()), live_server_starts())
    except (OSError, psutil.Error):
        return 0
    for folder in found:
        shutil.rmtree(folder, ignore_errors=True)
    return sum(not f.exists() for f in found)
