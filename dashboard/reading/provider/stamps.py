"""What tells a page that a run changed, by stat calls alone (no file read but the status): the run's "events"
(its state, phase, message, key count and launch file: shown at once) and its "streams" (records, status,
process and console output, media folders: what grows with every chunk)."""

from __future__ import annotations

import os

from runstore import run_folder

EVENT_FILES = (run_folder.LAUNCH,)  # with the status's state and phase: what the page shows as soon as it changes
STREAM_FILES = (run_folder.RECORDS, run_folder.STATUS, run_folder.LOG, run_folder.OUTPUT)  # change every chunk
MEDIA = run_folder.ARTIFACTS  # tables, figures, images: written by rename or as new files, so their folders' times move
STATUS_FIELDS = ("state", "phase", "message", "resuming", "keys")


def file_stamps(folder: os.PathLike, names: tuple[str, ...]) -> list[str]:
    """ "size:mtime" of each named file of the run folder ("0" while missing), never through a link."""
    parts = []
    for name in names:
        try:
            st = os.stat(os.path.join(folder, name), follow_symlinks=False)
            parts.append(f"{st.st_size}:{st.st_mtime_ns}")
        except OSError:
            parts.append("0")
    return parts


def folder_times(folder: str, depth: int) -> list[str]:
    """The modification times of `folder` and its subfolders `depth` levels down (never through a link)."""
    try:
        st = os.stat(folder, follow_symlinks=False)
        entries = list(os.scandir(folder)) if depth else []
    except OSError:
        return []
    out = [str(st.st_mtime_ns)]
    for entry in sorted(entries, key=lambda e: e.name):
        if entry.is_dir(follow_symlinks=False):
            out += folder_times(entry.path, depth - 1)
    return out


def event_stamp(folder: os.PathLike) -> str:
    """The run's state, phase, message, resuming and key count (a new key gets its panel at once), and its launch
    file's size and time."""
    status = run_folder.RunFolder(folder).raw_status({})
    status = status if isinstance(status, dict) else {}
    parts = [repr([status.get(k) for k in STATUS_FIELDS])]
    return ",".join(parts + file_stamps(folder, EVENT_FILES))


def stream_stamp(folder: os.PathLike) -> str:
    """What grows with every chunk or epoch: its records, its progress, its output, its media."""
    return ",".join(file_stamps(folder, STREAM_FILES) + folder_times(os.path.join(folder, MEDIA), depth=2))


def event_files_stamp(folder: os.PathLike) -> str:
    """The launch file's size and time alone (stat only)."""
    return ",".join(file_stamps(folder, EVENT_FILES))
