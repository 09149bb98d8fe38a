"""One run folder, `<runs root>/<run id>/`: the floor of `runstore/`. Every name of a run's files (sub-layout
included) is a constant here and every path comes from `RunFolder`; the other runstore modules stand on it
(tests/test_layout.py checks that no module outside runstore/ names a run file).

`RunFolder` implements the contract `runstore.run_storage.RunStorage` (each operation: what it raises, what is
atomic, what a reader may assume; tests/test_run_folder_contract.py is the suite). Who writes which file:

* ``config.json`` - written once by the run's process at its start (`write_config`), replaced atomically
  afterwards only by that process (`merge_config`: a client's changed config, metric definitions) or by a
  sweep's worker before it starts the trial (`replace_config`). A reader sees the old or the new file.
* ``status.json`` - lifecycle and progress, replaced atomically by the run's process at every chunk
  (`write_status`); a reader may find "running" while the process is gone: `status()` says "crashed".
* ``metrics.jsonl`` - appended by the run's process only, one JSON object a line, each append fsync'd and
  ending in a newline (`append_records`). A reader may see a torn last line: it is never parsed, and read
  once its newline is there (`runstore.line_reader`, the one byte reader). The file is replaced as a whole (a
  new inode) only by a resume cutting records past its checkpoint or by a TensorBoard mirror starting over
  (`replace_records`); `RecordsReader` then starts over from byte 0. ``metrics.cache/`` is the page's
  columnar cache of it (`runstore.metrics.metric_cache`).
* ``final_metrics.json`` - the ended run's final metrics, written once, atomically, when it records its end.
* ``summary.json`` - a client run's summary as W&B keeps it (`write_summary`).
* ``artifacts/`` - media: tables/, figures/, images/, histograms/, texts/, values/, media/ and texts.json,
  each file replaced atomically or appended line by line by the run's process (`runstore.media_store`);
  logged/ holds `log_artifact`'s versions and ``files/`` what `wandb.save` kept (`runstore.run_files`).
* ``alerts.jsonl`` - a client run's alerts, appended; ``hosts.json`` - a multi-host job's hosts, replaced by
  its process 0 (`runstore.hosts`).
* ``ckpt/<step>/`` - checkpoints (Orbax); ``tb/`` and ``wandb/`` - TensorBoard's and W&B's files.
* ``stop`` - created by anyone to ask the process to stop after its current chunk; removed when it starts.
* ``notes.json`` - display name, tags and notes, written atomically by the page (`runstore.run_notes`).
* ``launch.json`` and ``process.log`` - written by the page's launcher (`runstore.launch_files`).
* ``output.log`` (and ``output.log.1``) - a client run's console output (`runstore.run_output`).

All writes go through `runstore.nofollow` (via `runstore.atomic`): never through a link planted in the folder,
a failed write leaves no temp file and no half line. No JAX, no Streamlit, no network client here.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from runstore import atomic, hosts, line_reader, nofollow, small_json
from runstore.processes import pid_alive
from runstore.run_checks import DamagedRunFile, load_json_object, validate_status
from runstore.run_storage import RunStorage

CONFIG = "config.json"
STATUS = "status.json"
RECORDS = "metrics.jsonl"
METRICS_CACHE = "metrics.cache"  # the page's columnar cache of RECORDS
SUMMARY = "summary.json"
FINAL_METRICS = "final_metrics.json"
STOP = "stop"
CHECKPOINTS = "ckpt"
TENSORBOARD = "tb"
WANDB = "wandb"
NOTES = "notes.json"
LAUNCH = "launch.json"
LOG = "process.log"
OUTPUT = "output.log"  # a client script's console output
OUTPUT_ROTATED = "output.log.1"  # its rotated older part
ALERTS = "alerts.jsonl"
HOSTS = "hosts.json"
FILES = "files"  # what `wandb.save` kept, under its relative path
ARTIFACTS = "artifacts"
# artifacts/'s sub-layout: one folder a kind of media, <kind>/<tag>... (runstore.media_store, runstore.artifacts)
TABLES, FIGURES, IMAGES, HISTOGRAMS, TEXTS, VALUES, MEDIA = (
    "tables", "figures", "images", "histograms", "texts", "values", "media",
)  # fmt: skip
LOGGED = "logged"  # artifacts/logged/<name>/v<N>/: `log_artifact`'s versions (runstore.run_files)
TEXTS_LATEST = "texts.json"  # artifacts/texts.json: the latest text of each tag
MEDIA_KINDS = (TABLES, FIGURES, IMAGES, HISTOGRAMS, TEXTS, VALUES, MEDIA)
# Every name a run folder's contract gives a file or folder: no module outside runstore/ spells one.
NAMES = (CONFIG, STATUS, RECORDS, METRICS_CACHE, SUMMARY, FINAL_METRICS, STOP, CHECKPOINTS, TENSORBOARD, WANDB,
         ARTIFACTS, NOTES, LAUNCH, LOG, OUTPUT, OUTPUT_ROTATED, ALERTS, HOSTS, TEXTS_LATEST)  # fmt: skip
# Files only a training process writes: a folder holding one of them but no config.json is a damaged run.
RUN_FILES = (STATUS, RECORDS, FINAL_METRICS, ARTIFACTS, CHECKPOINTS, TENSORBOARD, WANDB, STOP)
MAX_EVENTS = 50
PROCESS_GONE = "The training process exited without finishing (killed or crashed)."
small_json.BOUNDS.update(
    {STATUS: small_json.PROCESS_STATE, HOSTS: small_json.PROCESS_STATE, LAUNCH: small_json.PAGE_LAUNCH}
)
_STATUS_LOCK = threading.Lock()  # writers' background threads update status.json too: no lost read-modify-write


def artifacts_rel(*parts: str) -> str:
    """A place under artifacts/ relative to its run folder, '/'-joined (for `runstore.nofollow`)."""
    return "/".join((ARTIFACTS, *parts))


class RecordsReader:
    """Reads a run's metrics.jsonl incrementally, as TensorBoard's event file loader reads an event file.

    Every record is yielded once; a torn last line is left until its newline is written (waited for, never
    parsed half); the file is never read again in full, except when it was replaced by a new file (another
    inode, or shorter than what was read: `line_reader.replaced`), and then it is read from its start.
    """

    def __init__(self, run_dir: str | os.PathLike, offset: int = 0, max_bytes: int | None = None) -> None:
        self.path = Path(run_dir) / RECORDS
        self.offset = offset
        self.max_bytes = max_bytes
        self._key: line_reader.FileKey | None = None

    def load(self) -> Iterator[dict[str, Any]]:
        """The records written since the last call, in file order (none when the file is missing)."""
        st = line_reader.stat(self.path)
        if st is not None:  # a missing file is waited for, not a replaced one
            known = self._key if self._key is not None else line_reader.file_key(st)
            if line_reader.replaced(known, st, self.offset):
                self.offset = 0
            self._key = line_reader.file_key(st)
        data, self.offset = line_reader.read_lines(self.path, self.offset, self.max_bytes)
        yield from line_reader.parse_records(data)

    def read_new(self) -> list[dict[str, Any]]:
        """`list(load())`: the new records."""
        return list(self.load())


class RunFolder(RunStorage):
    """One run's folder: every place of its files, and the contract's operations on them (`RunStorage`)."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)

    def __repr__(self) -> str:
        return f"RunFolder({str(self.path)!r})"

    # -- places ---------------------------------------------------------------------------------------
    config_path = property(lambda self: self.path / CONFIG, doc="config.json.")
    status_path = property(lambda self: self.path / STATUS, doc="status.json.")
    records_path = property(lambda self: self.path / RECORDS, doc="metrics.jsonl.")
    metrics_cache = property(lambda self: self.path / METRICS_CACHE, doc="metrics.cache/: the records' cache.")
    summary_path = property(lambda self: self.path / SUMMARY, doc="summary.json.")
    final_metrics_path = property(lambda self: self.path / FINAL_METRICS, doc="final_metrics.json.")
    stop_path = property(lambda self: self.path / STOP, doc="stop: its presence asks the process to stop.")
    checkpoints = property(lambda self: self.path / CHECKPOINTS, doc="ckpt/: checkpoints, one folder a step.")
    tensorboard = property(lambda self: self.path / TENSORBOARD, doc="tb/: the run's TensorBoard event files.")
    wandb = property(lambda self: self.path / WANDB, doc="wandb/: W&B's run folder.")
    notes_path = property(lambda self: self.path / NOTES, doc="notes.json: the page's name, tags and notes.")
    launch_path = property(lambda self: self.path / LAUNCH, doc="launch.json (the page's, before the process).")
    log_path = property(lambda self: self.path / LOG, doc="process.log: the launched process's output.")
    output_path = property(lambda self: self.path / OUTPUT, doc="output.log: a client script's console output.")
    output_rotated_path = property(lambda self: self.path / OUTPUT_ROTATED, doc="output.log.1: its older part.")
    alerts_path = property(lambda self: self.path / ALERTS, doc="alerts.jsonl: a client run's alerts.")
    hosts_path = property(lambda self: self.path / HOSTS, doc="hosts.json: a multi-host job's hosts.")
    files = property(lambda self: self.path / FILES, doc="files/: what `wandb.save` kept.")
    artifacts = property(lambda self: self.path / ARTIFACTS, doc="artifacts/: the run's media.")
    logged = property(lambda self: self.path / ARTIFACTS / LOGGED, doc="artifacts/logged/: logged artifacts.")
    texts_latest_path = property(lambda self: self.path / ARTIFACTS / TEXTS_LATEST, doc="artifacts/texts.json.")

    def media_dir(self, kind: str) -> Path:
        """artifacts/<kind>/ for a kind of media (one of MEDIA_KINDS: tables, figures, images, ...)."""
        if kind not in MEDIA_KINDS:
            raise ValueError(f"{kind!r} is not a kind of media of a run folder (one of {', '.join(MEDIA_KINDS)})")
        return self.path / ARTIFACTS / kind

    # -- reading --------------------------------------------------------------------------------------
    def has_config(self) -> bool:
        """Whether the run's process wrote config.json."""
        return self.config_path.exists()

    def has_launch(self) -> bool:
        """Whether the page launched this run (launch.json)."""
        return self.launch_path.exists()

    def has_tensorboard(self) -> bool:
        """Whether the run has a tb/ folder."""
        return self.tensorboard.is_dir()

    def checkpoint_steps(self) -> list[int]:
        """Steps of the complete checkpoints in ckpt/, ascending: Orbax renames a finished save to its step
        number (an unfinished one lives in "<step>.orbax-checkpoint-tmp-*"). No JAX, no Orbax."""
        ckpt = self.checkpoints
        return sorted(int(p.name) for p in ckpt.iterdir() if p.name.isdigit()) if ckpt.is_dir() else []

    def has_checkpoint(self) -> bool:
        """Whether ckpt/ holds a complete checkpoint."""
        return bool(self.checkpoint_steps())

    def records_size(self) -> int:
        """metrics.jsonl's size in bytes, never following a link (OSError when it is missing)."""
        return os.stat(self.records_path, follow_symlinks=False).st_size

    def config(self, default: Any = None) -> Any:
        """config.json as JSON (`default` when missing or unreadable)."""
        return atomic.read_json(self.config_path, default)

    def checked_config(self) -> dict[str, Any] | None:
        """config.json as an object, None when missing; raises `DamagedRunFile` naming the file."""
        return load_json_object(self.config_path)

    def status(self) -> dict[str, Any]:
        """status.json, checked; a "running" run whose process is gone from this machine is "crashed".

        Missing: {}. Unreadable, truncated or of the wrong shape: {"state": "damaged", "message": <file: what>}.
        """
        try:
            status = load_json_object(self.status_path)
            status = validate_status(status, STATUS) if status is not None else {}
        except DamagedRunFile as exc:
            return {"state": "damaged", "message": str(exc)}
        if status.get("state") == "running" and status.get("host", socket.gethostname()) == socket.gethostname():
            if not pid_alive(status.get("pid")):
                status["state"] = "crashed"
                status.setdefault("message", None)
                lost = self._lost_host() if not status["message"] else None
                if lost is not None:
                    status["lost_host"], status["message"] = lost
                status["message"] = status["message"] or PROCESS_GONE
        return status

    def _lost_host(self) -> tuple[int, str] | None:
        """(process, message) of a job's host that is gone, when its process 0 ended without a word (a collective
        aborts process 0 the moment a peer dies, before it can record why); None when no other host is gone."""
        shown, _ = self.hosts()
        gone = [h for h in shown if h["process"] not in (0, None) and h["state"] == "crashed"]
        if not gone:
            return None
        why = "its process is gone (killed or crashed)"
        return gone[0]["process"], hosts.lost_message(gone[0], len(shown), why)

    def raw_status(self, default: Any = None) -> Any:
        """status.json as written (no crash check)."""
        return atomic.read_json(self.status_path, default)

    def records(self, offset: int = 0, max_bytes: int | None = None) -> tuple[list[dict[str, Any]], int]:
        """Records from byte `offset` on and the new offset (`line_reader.read_lines`: whole lines only)."""
        data, end = line_reader.read_lines(self.records_path, offset, max_bytes)
        return line_reader.parse_records(data), end

    def final_metrics(self) -> dict[str, Any]:
        """The ended run's final metrics: final_metrics.json, else (an older run folder) artifacts/final_metrics.json;
        {} when neither holds a JSON object."""
        for path in (self.final_metrics_path, self.artifacts / FINAL_METRICS):
            found = atomic.read_json(path, None)
            if isinstance(found, dict):
                return found
        return {}

    def hosts(self, now: float | None = None) -> tuple[list[dict[str, Any]], str | None]:
        """hosts.json as the page shows it and a one-line problem or None (`runstore.hosts.read_hosts`)."""
        return hosts.read_hosts(self.hosts_path, now)

    def stop_requested(self) -> bool:
        """Whether someone asked the run to stop."""
        return self.stop_path.exists()

    # -- writing --------------------------------------------------------------------------------------
    def write_config(
        self, task: str, config: Mapping[str, Any], name: str | None = None, command: list[str] | None = None,
        **extra: Any,
    ) -> None:  # fmt: skip
        """Write config.json once, at the start of the run (`extra`: e.g. a population member's "group", "member")."""
        doc = {"run_id": self.path.name, "name": name or self.path.name, "task": task, "config": dict(config),
               "created": time.time(), "command": command, **extra}  # fmt: skip
        atomic.atomic_write_json(self.config_path, doc)

    def replace_config(self, doc: dict[str, Any]) -> None:
        """Replace config.json by `doc` (atomic)."""
        atomic.atomic_write_json(self.config_path, doc)

    def merge_config(self, **fields: Any) -> None:
        """Set top-level fields of config.json, keeping the others (atomic), e.g. a client's `config` changed
        after its start, or "define_metric". The writer of config.json only."""
        doc = atomic.read_json(self.config_path, {})
        doc = doc if isinstance(doc, dict) else {}
        doc.update(fields)
        atomic.atomic_write_json(self.config_path, doc)

    def write_status(self, **fields: Any) -> dict[str, Any]:
        """Merge `fields` into status.json (atomic replace) and return the new status.

        Fields used: state, pid, host, started, ended, message, step, total_steps, epoch, total_epochs,
        wall_seconds, compile_seconds, steps_per_sec, final (dict), final_basis (dict: what a final number is where it
        is not the metric's last logged value, e.g. "epoch mean"), wandb (dict: mode, url, sync_command, dir), updated.
        """
        with _STATUS_LOCK:
            status = atomic.read_json(self.status_path, {})
            status = status if isinstance(status, dict) else {}  # a damaged status.json is replaced, not merged
            status.update(fields)
            status["updated"] = time.time()
            atomic.atomic_write_json(self.status_path, status)
        return status

    def start_status(self, total_steps: int, **extra: Any) -> dict[str, Any]:
        """Mark the run as running in this process."""
        return self.write_status(state="running", pid=os.getpid(), host=socket.gethostname(), started=time.time(),
                                 ended=None, message=None, step=0, total_steps=total_steps, **extra)  # fmt: skip

    def add_event(self, kind: str, message: str, **extra: Any) -> None:
        """Append {"time", "kind", "message", ...} to status.json "events" (the newest MAX_EVENTS kept),
        e.g. kind "write_gap": the run store could not be written for a while (a full disk), then was."""
        with _STATUS_LOCK:
            status = atomic.read_json(self.status_path, {})
            status = status if isinstance(status, dict) else {}
            events = status.get("events") if isinstance(status.get("events"), list) else []
            events = [*events, {"time": time.time(), "kind": kind, "message": message, **extra}][-MAX_EVENTS:]
            status["events"] = events
            status["updated"] = time.time()
            atomic.atomic_write_json(self.status_path, status)

    def append_records(self, records: list[Mapping[str, Any]]) -> None:
        """Append records to metrics.jsonl and fsync, so a kill loses at most this chunk."""
        if records:
            self.append_record_lines(atomic.metric_lines(records))

    def append_record_lines(self, lines: str) -> None:
        """Append ready-made metrics.jsonl lines (`atomic.metric_lines`, `atomic.column_lines`) and fsync; a
        failure leaves no half-written line.

        Raises:
          UnsafePath: metrics.jsonl is a link, FIFO or other non-regular file (never followed, never blocking);
            OSError naming the file (e.g. a full disk).
        """
        if lines:
            atomic.append_lines(self.path, RECORDS, lines)

    def replace_records(self, records: list[dict[str, Any]]) -> None:
        """Replace metrics.jsonl by a new file holding `records` (atomic, fsync'd, a new inode: a
        `RecordsReader` starts over on it). Only the run's writer: a mirror starting over or rewriting."""
        atomic.atomic_write_bytes(self.records_path, atomic.metric_lines(records).encode())

    def write_summary(self, summary: Mapping[str, Any]) -> None:
        """summary.json: the run's summary as W&B keeps it (numbers, strings, {"min": .., "max": ..} dicts)."""
        atomic.atomic_write_json(self.summary_path, dict(summary))

    def write_final_metrics(self, final: dict[str, Any]) -> None:
        """final_metrics.json beside config.json (atomic): the ended run's final metrics, their one place."""
        atomic.atomic_write_json(self.final_metrics_path, final)

    def write_hosts(self, processes: int, found: list[dict[str, Any]]) -> None:
        """Replace hosts.json (process 0 of the job only; `runstore.hosts.write_hosts`)."""
        hosts.write_hosts(self.hosts_path, processes, found)

    def request_stop(self) -> None:
        """Ask the process to stop after its current chunk (a link planted as `stop` is replaced, never followed)."""
        nofollow.replace(self.path, STOP, b"", fsync=False)

    def clear_stop(self) -> None:
        """Forget a stop request (the process, when it starts or resumes)."""
        self.stop_path.unlink(missing_ok=True)
