"""TensorBoard log folders read live, as run folders the dashboard already knows how to show.

`jaxdash --logdir DIR` (env JAXDASH_LOGDIR) points the page at any TensorBoard logdir (tensorboardX,
TF, Flax/CLU: any folder holding `events.out.tfevents.*`). Each run found there gets a mirror run
folder under <runs root>/.logdir/<slug>/ holding config.json (task "TensorBoard log"), status.json
and metrics.jsonl, so the Runs table, Live, compare and detail read it like a run of ours.

Events are read with TensorBoard's own `EventFileLoader`, over bounded record reads
(runstore/event_files.py: regular files inside the logdir only, record lengths checked before
anything is allocated), incrementally: one loader per event file is kept for the life of the
server process and each sync appends only the events written since the last one. A new process
starts each mirror's metrics.jsonl afresh, which is one full read per file per server start.
Each file is read on its own thread (runstore/tb_reads.py) and a sync waits READ_LIMIT_S at most:
a file that is damaged, refused or does not answer makes its run "damaged" with a message naming
the file; every other run is mirrored as usual.

Mirror ids are unique and stable per folder (`mirror_id`): a name that is already a plain id keeps
it; any other gets a slug plus a hash of the name, so `RunA`, `runa`, `exp.1` and `exp-1` never share
a mirror.

Run layout: a folder with event files is a run; a CLU/Keras split folder (train/, eval/, ...) is
folded into its parent run with its name as a tag prefix; an `add_hparams` side run (a subfolder named by a
timestamp) is folded into its parent run as its hparams and summary (runstore/tb_hparams_run.py). Folders inside one of our own run folders
(which hold config.json and write tb/ themselves) are left out, so our runs are never listed twice.
No JAX and no Streamlit here.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import threading
import time
from concurrent.futures import wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runstore import run_store, safe_files, tb_hparams_run, tb_media, tb_reads
from runstore.run_folder import RunFolder

MIRROR = ".logdir"  # hidden folder under the runs root: never listed as a run itself
TASK = "TensorBoard log"
RECENT_S = 30.0  # a run whose newest event file grew within this many seconds is "running"
# ... unless no process here holds its event files open (its writer closed them or exited) for IDLE_S: then it
# is "finished" within seconds of its writer's exit (tb_reads.open_for_writing; a writer on another machine
# is not seen, so its run reads "finished" after IDLE_S without growth and "running" again when it grows).
# A local writer that pauses longer stays "running" while it holds its file, so IDLE_S only sets how soon a
# closed writer's run reads finished: the pages show it within 5 s of the last write (runstore/logdir_watch.py
# syncs at IDLE_S after it; tests/test_live_new_runs.py).
IDLE_S = 2.0
SPLITS = ("train", "eval", "validation", "valid", "test")  # CLU / Keras sub-folders of one run
EVENT_PREFIX = "events.out.tfevents."
META = ("step", "wall", "ts")  # the keys of a metrics.jsonl record that are not tags
ID_LEN = 80  # the longest mirror id kept as the name itself
# A name kept as its own mirror id: lowercase segments of letters and digits joined by single "-" or "_",
# separated by "/" (written "__", which no segment holds, so two names never give one id; no "." either,
# which every hashed id holds).
_PLAIN_ID = re.compile(r"[a-z0-9]+(?:[-_][a-z0-9]+)*(?:/[a-z0-9]+(?:[-_][a-z0-9]+)*)*")


@dataclass
class _Mirror:
    files: dict[Path, tb_reads.EventFile] = field(default_factory=dict)
    first_wall: float | None = None
    last_step: dict[str, int] = field(default_factory=dict)  # each tag's last step in metrics.jsonl


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


def mirror_id(name: str) -> str:
    """The mirror folder (run id) of the logdir run `name`: unique per name and the same on every start.

    A plain name ("exp1", "project/workdir") is its own id ("exp1", "project__workdir"); any other
    ("RunA", "exp.1", a name over ID_LEN characters, the logdir itself ".") gets a slug, a ".", and 16
    hex digits of the name's BLAKE2 hash ("runa.3f...").
    """
    if _PLAIN_ID.fullmatch(name) and len(name.replace("/", "__")) <= ID_LEN:
        return name.replace("/", "__")
    slug = run_store.slugify(name.replace("/", "__"), ID_LEN - 17) or "logdir"
    digest = hashlib.blake2b(name.encode("utf-8", "surrogateescape"), digest_size=8).hexdigest()
    return f"{slug}.{digest}"


def find_runs(root: Path) -> dict[str, list[tuple[Path, str]]]:
    """Every TensorBoard run under `root`: {run name: [(event file, tag prefix), ...]}.

    The run name is the folder's path relative to `root` ("." for root itself); hidden folders
    and folders inside our own run folders (config.json next to them or above) are skipped. Only
    names are listed (nothing is opened): a FIFO or link named like an event file is listed and
    refused when read; a folder link leaving `root` is listed as a run of its own, to say so.
    """
    root = Path(root)
    found: dict[str, list[tuple[Path, str]]] = {}
    for here, dirs, files in os.walk(root):  # folder links are listed in dirs, never walked into
        folder = Path(here)
        if (run := RunFolder(folder)).config_path.exists() and run.status_path.exists():
            dirs[:] = []  # one of our run folders: its tb/ is already shown as that run
            continue
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for d in dirs:
            if os.path.islink(folder / d) and not safe_files.inside(root, folder / d):
                found.setdefault((folder / d).relative_to(root).as_posix(), []).append((folder / d, ""))
        events = sorted(f for f in files if f.startswith(EVENT_PREFIX))
        if not events:
            continue
        run, prefix = folder, ""
        if folder.name in SPLITS and folder != root:
            run, prefix = folder.parent, folder.name + "/"
        elif tb_hparams_run.is_side_run(folder, root):
            run = folder.parent  # add_hparams' session: the parent run's hparams and summary
        name = run.relative_to(root).as_posix()
        found.setdefault(name, []).extend((folder / f, prefix) for f in events)
    return found


def covered(root: Path, found: dict[str, list[tuple[Path, str]]]) -> set[Path]:
    """The folders directly under `root` that hold a found TensorBoard run (where root is also a runs root,
    these are shown as their TensorBoard runs, not as run folders missing config.json)."""
    return {Path(root) / name.split("/")[0] for name in found if name != "."}


def _start_mirror(mirror: Path, name: str, source: Path) -> _Mirror:
    """A fresh mirror folder for this process: config.json, and an empty metrics.jsonl to read into."""
    mirror.mkdir(parents=True, exist_ok=True)
    folder = RunFolder(mirror)
    if not folder.config_path.exists():
        folder.write_config(TASK, {"logdir": str(source)}, name=name, source=TASK)
    run_store.atomic_write_json(folder.status_path, {"state": "running", "source": TASK})
    if safe_files.is_real_dir(folder.artifacts):
        shutil.rmtree(folder.artifacts, ignore_errors=True)  # read again from the start, as metrics.jsonl
    tb_media.forget(mirror)
    folder.replace_records([])  # a new file: readers see a replaced file and start over
    return _Mirror()


def _records(state: _Mirror, events: list[tb_reads.Event]) -> list[dict[str, Any]]:
    """metrics.jsonl records of a run's new events (tags under their split's prefix), oldest first."""
    events.sort(key=lambda e: (e[0], e[1]))
    records = []
    for wall, step, values in events:
        if state.first_wall is None:
            state.first_wall = wall
        record: dict[str, Any] = {"step": step, "wall": round(wall - state.first_wall, 4), "ts": wall}
        record.update((tag, v) for tag, v in values if tag not in META)  # a tag "step" is not the record's step
        records.append(record)
    return records


def preempted(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`records` (oldest first) as TensorBoard serves them: a point at a step at or below its tag's last step
    (a writer restarted in the same folder, steps from 0 again) drops that tag's earlier points at or after
    its step. This is TensorBoard's default reader (the Rust data server's "preemption", per time series);
    a record left with no value is dropped."""
    kept: list[dict[str, Any]] = []
    steps: dict[str, list[tuple[int, int]]] = {}  # tag -> (step, index in kept), steps increasing
    for record in records:
        step, at = record["step"], len(kept)
        kept.append(dict(record))
        for tag in [k for k in record if k not in META]:
            seen = steps.setdefault(tag, [])
            while seen and seen[-1][0] >= step:
                kept[seen.pop()[1]].pop(tag, None)
            seen.append((step, at))
    return [r for r in kept if any(k not in META for k in r)]


def _write_records(mirror: Path, state: _Mirror, records: list[dict[str, Any]]) -> None:
    """Append a sync's records to metrics.jsonl; a restarted writer's records rewrite it as TensorBoard shows
    the run (`preempted`), as a new file, which readers see replaced and read again."""
    restart = any(state.last_step.get(k, -1) >= r["step"] for r in records for k in r if k not in META)
    if restart:
        old, _ = RunFolder(mirror).records()
        records = preempted(old + records)
        RunFolder(mirror).replace_records(records)  # a new file (new inode): readers start over, as at _start_mirror
        state.last_step.clear()
    elif records:
        records = preempted(records)
        RunFolder(mirror).append_records(records)
    for r in records:
        state.last_step.update({k: r["step"] for k in r if k not in META})


def _files(state: _Mirror, root: Path, files: list[tuple[Path, str]]) -> list[tb_reads.EventFile]:
    """A run's event files, each with the loader it keeps for the life of the process."""
    out = []
    for path, prefix in files:
        entry = state.files.get(path)
        if entry is None:
            entry = state.files[path] = tb_reads.EventFile(path, root, prefix)
        out.append(entry)
    return out


def _new_records(state: _Mirror, files: list[tuple[Path, str]]) -> tuple[list[dict[str, Any]], list[str]]:
    """The records of a run's finished reads, and why any of its files cannot be read."""
    events: list[tb_reads.Event] = []
    for path, _ in files:
        entry = state.files.get(path)
        new = entry.collect() if entry is not None else []
        if new is None:
            state.files.pop(path, None)
        else:
            events += new
    damage = [e.damage for p, _ in files if (e := state.files.get(p)) is not None and e.damage]
    return _records(state, events), damage


def sync(root: Path, runs_root: Path, now: float | None = None) -> list[Path]:
    """Bring every mirror of the runs under `root` up to date; returns the mirror folders.

    Reads only events appended since the last sync, each changed file on its own thread, and waits
    READ_LIMIT_S at most for them. A run's status.json says "running" while its newest event file
    changed within IDLE_S, within RECENT_S while a local process holds one of its files open, or while its
    reader has not read to the end of its files (phase "catching up"); else "finished" (with its last step),
    or "damaged" naming the file that could not be read.
    """
    now = time.time() if now is None else now
    root = Path(root)
    out: list[Path] = []
    taken: set[Path] = set()
    runs: list[tuple[Path, _Mirror, list[tuple[Path, str]]]] = []
    with _LOCK:
        for name, files in find_runs(root).items():
            mirror = mirror_root(runs_root) / mirror_id(name)
            if mirror in taken:
                continue  # two names with one 64-bit hash: never merged, the first keeps the mirror
            state = _MIRRORS.get(mirror)
            if state is None or not RunFolder(mirror).records_path.exists():
                state = _MIRRORS[mirror] = _start_mirror(mirror, name if name != "." else root.name, root / name)
            runs.append((mirror, state, files))
            taken.add(mirror)
            out.append(mirror)
        started = tb_reads.start_reads([e for _, state, files in runs for e in _files(state, root, files)])
        wait(started, timeout=tb_reads.READ_LIMIT_S)
        held = _held_open([files for _, _, files in runs], now)
        for mirror, state, files in runs:
            side = [p for p, _ in files if tb_hparams_run.is_side_run(p.parent, root)]
            records, damage = _new_records(state, [f for f in files if f[0] not in side])
            values, side_damage = tb_hparams_run.summary(state.files, side)
            damage += side_damage
            _write_records(mirror, state, records)
            tb_hparams_run.write_summary(mirror, values)
            tb_media.write(
                mirror, [m for p, _ in files if (e := state.files.get(p)) is not None for m in e.take_media()]
            )
            _write_status(mirror, _verdict(files, now, damage, held, _read_percent(state, files)), records, now)
    return out


CATCHING_UP = "catching up"  # a mirror's status.json phase while its reader is behind its files


def _read_percent(state: _Mirror, files: list[tuple[Path, str]]) -> int | None:
    """How much of a run's event files its reader has read (a percentage), or None when it has read to the end.

    Behind while a read is in flight, stopped at its read budget (event_files.READ_BUDGET: a large file is read
    over several syncs), or the file changed since its last read began: a server restarted over a 1M-event
    logdir reads for minutes, and the run is not "finished" before that."""
    read = total = 0
    behind = False
    for path, _ in files:
        entry = state.files.get(path)
        if entry is None:
            continue
        key = tb_reads.file_key(path)
        size = key[1] if key else 0
        read, total = read + min(entry.loader.reader.offset, size), total + size
        behind |= entry.future is not None or entry.loader.reader.more or (bool(key) and key != entry.key)
    return min(99, int(100 * read / total)) if behind and total else 0 if behind else None


def _held_open(runs: list[list[tuple[Path, str]]], now: float) -> set[str] | None:
    """The event files a local process holds open, asked only of runs idle for IDLE_S but not RECENT_S."""
    idle = [p for files in runs for p, _ in files if IDLE_S <= now - _newest(files) < RECENT_S]
    return tb_reads.open_for_writing(idle) if idle else set()


def _newest(files: list[tuple[Path, str]]) -> float:
    return max((_mtime(p) for p, _ in files), default=0.0)


def _running(files: list[tuple[Path, str]], now: float, held: set[str] | None) -> bool:
    """Its newest event file grew within IDLE_S, or within RECENT_S with a writer still holding a file open
    (or no way to tell)."""
    age = now - _newest(files)
    if age < IDLE_S:
        return True
    if age >= RECENT_S:
        return False
    return held is None or any(os.path.realpath(p) in held for p, _ in files)


@dataclass(frozen=True)
class _Verdict:
    """What one sync says of a mirror's run: its state, the message naming its damage, its phase, its end."""

    state: str
    message: str | None = None
    phase: str | None = None
    ended: float | None = None


def _verdict(
    files: list[tuple[Path, str]], now: float, damage: list[str], held: set[str] | None, read_percent: int | None
) -> _Verdict:
    """The run's state from its writer (`_running`), or its damage.

    A reader still behind its files (`read_percent` not None) keeps the run "running" with the phase
    "catching up (N% read)", which the pages show on its progress line: "finished" only once all is read."""
    catching_up = read_percent is not None
    state = "damaged" if damage else "running" if catching_up or _running(files, now, held) else "finished"
    phase = f"{CATCHING_UP} ({read_percent}% read)" if catching_up and state == "running" else None
    message = None
    if damage:
        message = damage[0] + (f" (and {len(damage) - 1} more file(s))" if len(damage) > 1 else "")
    return _Verdict(state, message, phase, _newest(files) if state == "finished" else None)


def _write_status(mirror: Path, verdict: _Verdict, records: list[dict[str, Any]], now: float) -> None:
    """status.json of a mirror as `verdict` says, with the last step of `records`; rewritten only on a change."""
    old = RunFolder(mirror).raw_status({}) or {}
    step = max((r["step"] for r in records), default=old.get("step"))
    state, message, phase = verdict.state, verdict.message, verdict.phase
    if (old.get("state"), old.get("step"), old.get("message"), old.get("phase")) == (state, step, message, phase):
        return
    fields = {"state": state, "source": TASK, "step": step}
    if state == "finished":
        fields["ended"] = verdict.ended
    doc = {**old, **fields, "updated": now}
    for key, value in (("message", message), ("phase", phase)):
        doc.pop(key, None)
        if value:
            doc[key] = value
    run_store.atomic_write_json(RunFolder(mirror).status_path, doc)


def _mtime(path: Path) -> float:
    try:
        return os.lstat(path).st_mtime
    except OSError:
        return 0.0


def status(run_dir: Path) -> dict[str, Any]:
    """A mirror's status.json as written by `sync` (no process to check: it is someone else's)."""
    doc = RunFolder(run_dir).raw_status({})
    return doc if isinstance(doc, dict) else {}


SYNC_EVERY_S = 0.4  # a page's request (runstore/logdir_watch.py) syncs a changed logdir at most this often
