"""TensorBoard log folders read live, as run folders the dashboard already knows how to show.

`jaxdash --logdir DIR` (env JAXDASH_LOGDIR) points the page at any TensorBoard logdir (tensorboardX,
TF, Flax/CLU: any folder holding `events.out.tfevents.*`). Each run found there gets a mirror run
folder under <runs root>/.logdir/<slug>/ holding config.json (task "TensorBoard log"), status.json
and metrics.jsonl, so the Runs table, Live, compare and detail read it like a run of ours.

Events are read with TensorBoard's own `EventFileLoader`, incrementally: one loader per event file
is kept for the life of the server process and each sync appends only the events written since the
last one. A new process starts each mirror's metrics.jsonl afresh (a loader cannot resume from a
saved offset), which is one full read per file per server start.

Run layout: a folder with event files is a run; a CLU/Keras split folder (train/, eval/, ...) is
folded into its parent run with its name as a tag prefix. Folders inside one of our own run folders
(which hold config.json and write tb/ themselves) are left out, so our runs are never listed twice.
No JAX and no Streamlit here.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runstore import run_store

MIRROR = ".logdir"  # hidden folder under the runs root: never listed as a run itself
TASK = "TensorBoard log"
RECENT_S = 30.0  # a run whose newest event file grew within this many seconds is "running"
SPLITS = ("train", "eval", "validation", "valid", "test")  # CLU / Keras sub-folders of one run
EVENT_PREFIX = "events.out.tfevents."


@dataclass
class _File:
    """One event file's loader, kept so the next sync reads only what was appended."""

    loader: Any
    prefix: str  # tag prefix of its split folder ("train/"), "" for a plain run folder


@dataclass
class _Mirror:
    files: dict[Path, _File] = field(default_factory=dict)
    first_wall: float | None = None


_MIRRORS: dict[Path, _Mirror] = {}  # mirror folder -> its loaders (shared by every session)
_LOCK = threading.Lock()


def logdir() -> Path | None:
    """The TensorBoard logdir this dashboard reads ($JAXDASH_LOGDIR), or None."""
    value = os.environ.get("JAXDASH_LOGDIR")
    return Path(value) if value else None


def mirror_root(runs_root: Path) -> Path:
    """Where the mirror run folders live under a runs root."""
    return Path(runs_root) / MIRROR


def is_mirror(run_dir: Path) -> bool:
    """True for a mirror run folder (a TensorBoard log's run)."""
    return Path(run_dir).parent.name == MIRROR


def find_runs(root: Path) -> dict[str, list[tuple[Path, str]]]:
    """Every TensorBoard run under `root`: {run name: [(event file, tag prefix), ...]}.

    The run name is the folder's path relative to `root` ("." for root itself); hidden folders
    and folders inside our own run folders (config.json next to them or above) are skipped.
    """
    root = Path(root)
    found: dict[str, list[tuple[Path, str]]] = {}
    for here, dirs, files in os.walk(root):
        folder = Path(here)
        if (folder / "config.json").exists() and (folder / "status.json").exists():
            dirs[:] = []  # one of our run folders: its tb/ is already shown as that run
            continue
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        events = sorted(f for f in files if f.startswith(EVENT_PREFIX))
        if not events:
            continue
        run, prefix = folder, ""
        if folder.name in SPLITS and folder != root:
            run, prefix = folder.parent, folder.name + "/"
        name = run.relative_to(root).as_posix()
        found.setdefault(name, []).extend((folder / f, prefix) for f in events)
    return found


def covered(root: Path, found: dict[str, list[tuple[Path, str]]]) -> set[Path]:
    """The folders directly under `root` that hold a found TensorBoard run (where root is also a runs root,
    these are shown as their TensorBoard runs, not as run folders missing config.json)."""
    return {Path(root) / name.split("/")[0] for name in found if name != "."}


def _scalars(event: Any) -> list[tuple[str, float]]:
    """The scalar values of one event: simple_value (tensorboardX, TF1) or a one-element tensor (TF2, CLU)."""
    from tensorboard.util import tensor_util

    out = []
    for value in event.summary.value:
        if value.HasField("simple_value"):
            out.append((value.tag, float(value.simple_value)))
        elif value.HasField("tensor") and value.metadata.plugin_data.plugin_name in ("scalars", ""):
            array = tensor_util.make_ndarray(value.tensor)
            if array.size == 1 and array.dtype.kind in "fiu":
                out.append((value.tag, float(array.reshape(()))))
    return out


def _read_new(state: _Mirror, path: Path, prefix: str) -> list[dict[str, Any]]:
    """Records for the events appended to `path` since its last read (all of it the first time)."""
    from tensorboard.backend.event_processing.event_file_loader import EventFileLoader

    entry = state.files.get(path)
    if entry is None:
        entry = state.files[path] = _File(EventFileLoader(str(path)), prefix)
    records = []
    for event in entry.loader.Load():
        values = _scalars(event)
        if not values:
            continue
        if state.first_wall is None:
            state.first_wall = event.wall_time
        record: dict[str, Any] = {
            "step": int(event.step),
            "wall": round(event.wall_time - state.first_wall, 4),
            "ts": event.wall_time,
        }
        record.update({prefix + tag if not tag.startswith(prefix) else tag: v for tag, v in values})
        records.append(record)
    return records


def _start_mirror(mirror: Path, name: str, source: Path) -> _Mirror:
    """A fresh mirror folder for this process: config.json, and an empty metrics.jsonl to read into."""
    mirror.mkdir(parents=True, exist_ok=True)
    if not (mirror / "config.json").exists():
        run_store.write_config(mirror, TASK, {"logdir": str(source)}, name=name, source=TASK)
    run_store.atomic_write_json(mirror / "status.json", {"state": "running", "source": TASK})
    tmp = mirror / ".metrics.jsonl.tmp"
    tmp.write_bytes(b"")
    tmp.replace(mirror / "metrics.jsonl")  # a new file: readers see a replaced file and start over
    return _Mirror()


def sync(root: Path, runs_root: Path, now: float | None = None) -> list[Path]:
    """Bring every mirror of the runs under `root` up to date; returns the mirror folders.

    Reads only events appended since the last sync. A run's status.json says "running" while its
    newest event file changed within RECENT_S, else "finished" (with its last step).
    """
    now = time.time() if now is None else now
    out = []
    with _LOCK:
        for name, files in find_runs(root).items():
            slug = run_store.slugify(name.replace("/", "__"), 80) or "logdir"
            mirror = mirror_root(runs_root) / slug
            state = _MIRRORS.get(mirror)
            if state is None or not (mirror / "metrics.jsonl").exists():
                state = _MIRRORS[mirror] = _start_mirror(mirror, name if name != "." else Path(root).name, root / name)
            records = [r for path, prefix in files for r in _read_new(state, path, prefix)]
            records.sort(key=lambda r: (r["ts"], r["step"]))
            if records:
                run_store.append_metrics(mirror, records)
            _write_status(mirror, files, records, now)
            out.append(mirror)
    return out


def _write_status(mirror: Path, files: list[tuple[Path, str]], records: list[dict[str, Any]], now: float) -> None:
    """status.json of a mirror: state from the newest event file's age; rewritten only when it changes."""
    newest = max((_mtime(p) for p, _ in files), default=0.0)
    state = "running" if now - newest < RECENT_S else "finished"
    old = run_store.read_json(mirror / "status.json", {}) or {}
    step = max((r["step"] for r in records), default=old.get("step"))
    if old.get("state") == state and old.get("step") == step:
        return
    fields = {"state": state, "source": TASK, "step": step}
    if state == "finished":
        fields["ended"] = newest
    run_store.atomic_write_json(mirror / "status.json", {**old, **fields, "updated": now})


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def status(run_dir: Path) -> dict[str, Any]:
    """A mirror's status.json as written by `sync` (no process to check: it is someone else's)."""
    doc = run_store.read_json(Path(run_dir) / "status.json", {})
    return doc if isinstance(doc, dict) else {}


_LAST_SYNC: dict[tuple[Path, Path], float] = {}
SYNC_EVERY_S = 0.4  # pages poll at 0.5 s; sessions between them share one sync


def sync_if_due(root: Path, runs_root: Path) -> list[Path]:
    """`sync`, at most once every SYNC_EVERY_S for all sessions; the mirror folders either way."""
    key = (Path(root), Path(runs_root))
    now = time.monotonic()
    if now - _LAST_SYNC.get(key, -1e9) >= SYNC_EVERY_S:
        _LAST_SYNC[key] = now
        return sync(root, runs_root)
    return run_store.run_folders(mirror_root(runs_root))
