"""Run folders read once: an ended run is read again only when one of its files changed.

Every page lists every run on each open (1,000 runs: ~0.25 s of JSON reads and validation a list,
the bulk of the Runs page's server time). An ended run's listing depends only on its config.json,
status.json and launch.json, so it is kept with their inode, modification time and size and
reused while they stay the same: three stats a run (an atomic rewrite within the file system's
clock tick still shows as a new inode). A run that is starting, running or damaged is always read
anew: its state also depends on whether its process is alive, or on which files it has. The Runs
page's rows and selection (`read_run`, 100 runs a page) are read the same way, from the same kept runs.
No Streamlit here.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from runstore import run_states, run_store
from runstore.run_folder import CONFIG, LAUNCH, STATUS

ENDED_STATES = run_states.ENDED
KEY_FILES = (CONFIG, STATUS, LAUNCH)

FileKey = tuple[tuple[int, int, int], ...]
# folder -> (its files' keys, the run as read then): shared by every session of the server
_KNOWN: dict[Path, tuple[FileKey, run_store.RunInfo]] = {}


def _file_key(d: Path) -> FileKey:
    out, base = [], os.fspath(d) + os.sep  # plain strings: pathlib's joins cost more than the stats (10,000 runs)
    for name in KEY_FILES:
        try:
            st = os.stat(base + name)
            out.append((st.st_ino, st.st_mtime_ns, st.st_size))  # an atomic write is a new file: a new inode
        except OSError:
            out.append((0, 0, -1))
    return tuple(out)


def _copy(run: run_store.RunInfo) -> run_store.RunInfo:
    """A copy a caller may change (its status and config are new dicts)."""
    return dataclasses.replace(run, status=dict(run.status), config=dict(run.config))


def read_run(d: Path, status_of: Callable[[Path], dict[str, Any]] | None = None) -> run_store.RunInfo | None:
    """The run in folder `d` as `run_store.read_run` reads it (its status from `status_of` when given); an ended
    run is the copy kept from its last read while its files stay the same. None: `d` holds no run."""
    key = _file_key(d)
    known = _KNOWN.get(d)
    if known is not None and known[0] == key:
        return _copy(known[1])
    run = run_store.read_run(d)
    if run is None:
        return None
    if status_of is not None and not run.damaged:  # a damaged run keeps the message that says which file is wrong
        run.status = status_of(d)
    if run.status.get("state") in ENDED_STATES and key == _file_key(d):  # not changed while read
        _KNOWN[d] = (key, _copy(run))
    else:
        _KNOWN.pop(d, None)
    return run


def list_runs(
    root: str | os.PathLike | None = None, status_of: Callable[[Path], dict[str, Any]] | None = None
) -> list[run_store.RunInfo]:
    """Every run under `root` (as `run_store.read_run`, its status from `status_of` when given), newest first.

    Damaged runs are included (state "damaged", with the file that is wrong), links directly under
    the root too (listed as damaged, never read). Folders without a run (a page launch whose process
    has not written config.json yet) are left out; the page adds those (dashboard/reading/run_list.py).
    """
    root = run_store.runs_root(root)
    entries = run_store.run_folders(root)
    runs = [run for run in (read_run(d, status_of) for d in entries) if run is not None]
    for gone in set(_KNOWN.copy()) - set(entries):  # a copy: a page and the lister's thread list at once
        if gone.parent == root:
            _KNOWN.pop(gone, None)
    runs += run_store.linked_runs(root)  # links are shown as damaged, never read
    return sorted(runs, key=lambda r: r.created, reverse=True)
