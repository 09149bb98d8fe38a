"""One run folder as the run index holds it: identity, kind, state, flattened config, tags, notes and a
summary of each scalar (last, min, max), read through runstore's reading functions only.

The run folder stays the source of truth; this module decides what of it is worth indexing and when a
folder must be read again: its small files' (size, mtime) signature changed, or its records file grew
(then only the new records are read, from the offset kept in the index). No JAX and no Streamlit here.
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runstore import config_keys, launch_files, processes, run_folder, run_notes, run_states, run_store, wandb_reads
from runstore.run_checks import number_or_none

# The small files a run's listing depends on; metrics.jsonl is followed by offset instead. launch.json: a run
# the page launched is listed from it until its process writes config.json.
SMALL_FILES = (run_folder.CONFIG, run_folder.STATUS, run_folder.SUMMARY, run_folder.FINAL_METRICS, run_folder.NOTES,
               run_folder.LAUNCH)  # fmt: skip
# Where the dashboard mirrors a TensorBoard logdir's runs (runstore.tb_logdir.MIRROR; that module loads
# TensorBoard's reader, which the index does without): folders like any run's, of kind "tensorboard".
LOGDIR_MIRRORS = ".logdir"
RECENT_S = 10.0  # a folder changed within this long is checked file by file (see `signature`)
RECORD_META = ("step", "wall", "ts")  # a record's bookkeeping, not a scalar of the run
Stats = dict[str, list[Any]]  # key -> [last, min, max]


def signature(d: Path, now: float | None = None) -> str:
    """What says the run's small files are unchanged, as one string: equal strings mean nothing to re-read.

    Every writer replaces these files by a rename, which changes the folder's mtime: a folder untouched for
    RECENT_S is known by its own (inode, mtime), one stat instead of five (10,000 runs: ~0.3 s less an
    update). A recently changed folder is known by each file's (size, mtime), since two renames within one
    tick of the file system's clock leave the folder's mtime alone.
    """
    try:
        st = os.stat(d, follow_symlinks=False)
    except OSError:
        return "-"
    if (now if now is not None else time.time()) - st.st_mtime > RECENT_S:
        return f"dir:{st.st_ino}:{st.st_mtime_ns}"
    parts, base = [], os.fspath(d) + os.sep  # plain strings: pathlib's joins cost more than the stats here
    for name in SMALL_FILES:
        try:
            st = os.stat(base + name, follow_symlinks=False)
            parts.append(f"{st.st_size}:{st.st_mtime_ns}")
        except OSError:
            parts.append("-")
    return "|".join(parts)


def records_key(d: Path) -> tuple[int, int, int]:
    """(inode, size, mtime) of metrics.jsonl, (0, -1, 0) when it is missing."""
    try:
        st = os.stat(os.path.join(d, run_folder.RECORDS), follow_symlinks=False)
    except OSError:
        return 0, -1, 0
    return st.st_ino, st.st_size, st.st_mtime_ns


@dataclass(frozen=True)
class Progress:
    """What says whether a running run still makes progress: status.json's last write ("updated", a unix time or
    None), its phase, and whether its process was held stopped (SIGSTOP) when the run was read."""

    updated: float | None = None
    phase: str | None = None
    stopped: bool = False


def progress(status: dict[str, Any]) -> Progress:
    """A run's `Progress` from its status.json (`runstore.processes.stalled_since` reads the same fields)."""
    updated, phase = number_or_none(status.get("updated")), status.get("phase")
    return Progress(
        updated if updated is not None and math.isfinite(updated) else None,
        None if phase is None else str(phase),
        processes.held_stopped(status),  # a look at /proc: only for a running run of this host
    )


@dataclass
class IndexedRun:
    """A run as the index keeps it (everything a query may ask about, and what a list shows)."""

    run_id: str
    path: str
    name: str
    kind: str  # "engine" (the training CLI or the page), "member" (of a population), "client" (jaxdash.init),
    # "tensorboard" (a logdir's run, mirrored), "launched" (started by the page, no config.json yet), "damaged"
    state: str
    message: str
    task: str
    group: str  # a population's id, else a W&B group, else ""
    created: float
    notes: str = ""
    job_type: str = ""  # a W&B script's job_type=
    config: dict[str, Any] = field(default_factory=dict)  # as config.json holds it (nested)
    tags: list[str] = field(default_factory=list)
    records: Stats = field(default_factory=dict)  # from metrics.jsonl alone (kept to fold in new records)
    summary: Stats = field(default_factory=dict)  # records, summary.json and the final metrics together
    member: int | None = None  # a population member's index in its population
    progress: Progress | None = None  # what a stall verdict reads (runstore.index_states)

    @property
    def flat_config(self) -> dict[str, Any]:
        """The config with nested settings as dotted keys ("model.hidden")."""
        return config_keys.flatten(self.config)


def _number(v: Any) -> float | None:
    """A finite number of a record or summary, else None (bools, strings, NaN and media are not scalars here)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return float(v) if math.isfinite(v) else None


def fold(stats: Stats, records: list[dict[str, Any]]) -> Stats:
    """`stats` with `records` folded in, in order: last, min and max of each finite scalar."""
    for rec in records:
        for key, value in rec.items():
            v = _number(value)
            if v is None or key in RECORD_META:
                continue
            s = stats.get(key)
            stats[key] = [v, v, v] if s is None else [v, min(s[1], v), max(s[2], v)]
    return stats


def _merged(records: Stats, summary: dict[str, Any], final: dict[str, Any]) -> Stats:
    """The run's summary: its records' stats, then its final metrics and summary.json (a W&B summary's value is
    the run's last word on a key; its {"min": .., "max": ..} entries widen the range)."""
    out = {k: list(v) for k, v in records.items()}
    for source in (final, summary):
        for key, value in source.items():
            if isinstance(value, dict):
                ends = [n for n in (_number(value.get(op)) for op in ("min", "max", "last", "mean")) if n is not None]
                last = _number(value.get("last"))
                if not ends:
                    continue
                s = out.get(key)
                lo, hi = (min(ends), max(ends)) if s is None or s[1] is None else (min(s[1], *ends), max(s[2], *ends))
                out[key] = [last if last is not None else (s[0] if s else None), lo, hi]
                continue
            v, s = _number(value), out.get(key)
            if isinstance(value, str):  # a text summary ("best_model": "b3"): compared as text, no range
                out[key] = [value, *(s[1:] if s else (None, None))]
            elif v is not None:
                out[key] = [v, v, v] if s is None or s[1] is None else [v, min(s[1], v), max(s[2], v)]
    return out


def _kind(d: Path, doc: dict[str, Any], damaged: bool) -> str:
    if damaged:
        return "damaged"
    if d.parent.name == LOGDIR_MIRRORS:
        return "tensorboard"
    if doc.get("group") is not None and doc.get("member") is not None:
        return "member"
    return "engine" if "task_spec" in doc else "client"


def read(d: Path, records: Stats | None = None, offset: int = 0) -> tuple[IndexedRun | None, int]:
    """The run in folder `d` and the offset its records were read to; (None, 0) when `d` holds no run.

    `records`/`offset`: what an earlier read folded in (only records after `offset` are read; pass
    None and 0 when metrics.jsonl was replaced or never read).
    """
    info = run_store.read_run(d)
    if info is None:
        return launched(d), 0
    folder = run_folder.RunFolder(d)
    doc = folder.config({})
    doc = doc if isinstance(doc, dict) else {}
    notes, meta = run_notes.load(d), wandb_reads.meta_of(doc)
    stats: Stats = {k: list(v) for k, v in (records or {}).items()}
    if not info.damaged:
        while True:  # bounded pieces: a run of millions of records never sits in memory at once
            new, end = folder.records(offset, max_bytes=8 << 20)
            fold(stats, new)
            if end == offset:
                break
            offset = end
    status = info.status
    if d.parent.name == LOGDIR_MIRRORS and not info.damaged:  # someone else's process: its state as the mirror says
        raw = run_store.read_json(folder.status_path, {})
        status = raw if isinstance(raw, dict) else status
    final = status.get("final") if isinstance(status.get("final"), dict) else {}
    tags = run_notes.clean_tags([*meta.tags, *notes.tags])
    run = IndexedRun(
        run_id=info.run_id,
        path=str(d),
        name=notes.display_name or info.name,
        kind=_kind(d, doc, info.damaged),
        state=str(status.get("state") or "?"),
        message=str(status.get("message") or ""),
        task=info.task,
        group=str(doc.get("group") or meta.group or ""),
        created=float(info.created or 0.0),
        notes=notes.notes or meta.notes,
        job_type=meta.job_type,
        config=info.config if isinstance(info.config, dict) else {},
        tags=tags,
        records=stats,
        summary=_merged(stats, wandb_reads.summary(d), {**folder.final_metrics(), **final}),
        member=_member(doc),
        progress=progress(status),
    )
    return run, offset


def _member(doc: dict[str, Any]) -> int | None:
    """A population member's index (config.json "member"), else None."""
    member = doc.get("member")
    return member if isinstance(member, int) and not isinstance(member, bool) and doc.get("group") else None


def _launch_state(folder: run_folder.RunFolder, info: dict[str, Any]) -> tuple[str, str]:
    """(state, message) of a page launch without config.json: its status.json's when written, else queued (waiting
    in the run queue), starting (its process lives) or failed (it exited first), as the Runs page says."""
    status = folder.status()
    if status.get("state"):
        return str(status["state"]), str(status.get("message") or "")
    if info.get("queue_error") and "pid" not in info:
        return run_states.FAILED, str(info["queue_error"])
    if info.get("queue_job") is not None and "pid" not in info:
        return run_states.QUEUED, ""
    if processes.pid_alive(info.get("pid")):
        return run_states.STARTING, ""
    return run_states.FAILED, "The training process exited before it started"


def launched(d: Path) -> IndexedRun | None:
    """A run the page launched whose process has not written config.json yet, from its launch.json; None when `d`
    holds no launch, or one the Runs page leaves out (a population's launch once its members are listed)."""
    folder = run_folder.RunFolder(d)
    if not folder.has_launch():
        return None
    info = launch_files.launch_info(d)
    if not info:
        message = launch_files.launch_damage(d)
        return IndexedRun(d.name, str(d), d.name, "damaged", "damaged", message, "?", "", _mtime(d))
    if info.get("group"):
        return None
    state, message = _launch_state(folder, info)
    name, task = str(info.get("name") or d.name), str(info.get("task") or "?")
    return IndexedRun(d.name, str(d), name, "launched", state, message, task, "", float(info.get("launched") or 0.0))


def _mtime(d: Path) -> float:
    try:
        return d.lstat().st_mtime
    except OSError:
        return 0.0


def is_active(state: str) -> bool:
    """Whether a run in this state may change without its files changing (its process may die)."""
    return state in run_states.ACTIVE
