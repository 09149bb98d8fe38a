"""One run folder, `<runs root>/<run id>/`: the only contract between a training process, a user's script
(jaxdash), and the page. Every module outside `runstore/` reaches a run's files through `RunFolder`; the
names of the files live here and in the runstore modules it delegates to (tests/test_layout.py checks).

Who writes which file, and what a reader may assume (in the style of Optuna's `BaseStorage`):

* ``config.json`` - written once by the run's process at its start (`runstore.run_store.write_config`),
  replaced atomically afterwards only by that process (`update_config`: a client's changed config, metric
  definitions) or by a sweep's worker before it starts the trial. A reader sees the old or the new file.
* ``status.json`` - lifecycle and progress, replaced atomically (temp file + fsync + rename) by the run's
  process at every chunk; a reader may find "running" while the process is gone: `status()` says "crashed".
* ``metrics.jsonl`` - appended by the run's process only, one JSON object a line, each append fsync'd and
  ending in a newline (`runstore.atomic.append_metric_lines`). A reader may see a torn last line (a write
  in progress, or a kill): it is never parsed, and read again once its newline is there. The file is
  replaced as a whole (a new inode) only by a resume cutting records past its checkpoint or by a
  TensorBoard mirror starting over; `RecordsReader` then starts over from byte 0.
* ``final_metrics.json`` - the ended run's final metrics, one number a metric, written once, atomically, by the
  run's process when it records its end (`training.runs.lifecycle.close_run`, also status.json "final").
  A run folder from before #38 may hold only ``artifacts/final_metrics.json``: `final_metrics()` reads either.
* ``artifacts/``, ``summary.json`` - media (tables, images, texts, histograms): each file replaced
  atomically or appended line by line by the run's process (`runstore.media_store`).
* ``ckpt/<step>/`` - checkpoints, written by the training process (Orbax); `checkpoints()` is their place.
* ``stop`` - created by anyone (the page, a sweep) to ask the process to stop after its current chunk;
  the process removes it when it starts or resumes.
* ``notes.json`` - display name, tags and notes, written atomically by the page (`runstore.run_notes`).
* ``launch.json`` and ``process.log`` - written by the page's launcher before the process starts
  (`runstore.launch_files`); the process only appends its output to the log.
* ``output.log`` (and ``output.log.1``) - a client run's console output, appended by the script's process and
  rotated past `runstore.run_output.MAX_BYTES` (`runstore.run_output`); a reader may see a line in progress.
* ``tb/`` and ``wandb/`` - TensorBoard event files and W&B's run folder, written by those libraries.

All writes go through `runstore.nofollow` (via `runstore.atomic`): never through a link planted in the folder,
a failed write leaves no temp file and no half line. No JAX and no Streamlit here.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from runstore import atomic, launch_files, run_notes, run_output, run_store
from runstore.safe_files import open_regular

CONFIG = "config.json"
STATUS = "status.json"
RECORDS = "metrics.jsonl"
SUMMARY = "summary.json"
STOP = "stop"
CHECKPOINTS = "ckpt"
TENSORBOARD = "tb"
WANDB = "wandb"
ARTIFACTS = "artifacts"
FINAL_METRICS = "final_metrics.json"  # beside config.json (before #38 the store writer kept a copy under artifacts/)
NOTES = run_notes.FILE
LAUNCH = launch_files.LAUNCH
LOG = launch_files.LOG
OUTPUT = run_output.OUTPUT  # a client script's console output (output.log.1: its rotated older part)
OUTPUT_ROTATED = run_output.ROTATED
# Every name a run folder's contract gives a file or folder: no module outside runstore/ spells one.
NAMES = (CONFIG, STATUS, RECORDS, SUMMARY, FINAL_METRICS, STOP, CHECKPOINTS, TENSORBOARD, WANDB, ARTIFACTS, NOTES,
         LAUNCH, LOG, OUTPUT, OUTPUT_ROTATED)  # fmt: skip


def read_records(run_dir: str | os.PathLike, offset: int = 0, max_bytes: int | None = None,
                 ) -> tuple[list[dict[str, Any]], int]:  # fmt: skip
    """metrics.jsonl's records from byte `offset` on, and the new offset (for incremental polling).

    A trailing partial line (a write in progress, or left by a crash) is left for the next call;
    lines that are not JSON objects are skipped. With `max_bytes`, reads about that much (whole
    lines), so a huge file can be consumed in bounded pieces.
    """
    path = Path(run_dir) / RECORDS
    try:
        with open_regular(path) as f:  # never through a link, never a FIFO
            f.seek(offset)
            data = f.read() if max_bytes is None else f.read(max_bytes) + f.readline()
    except OSError:
        return [], offset
    end = data.rfind(b"\n") + 1
    records = []
    for line in data[:end].splitlines():
        try:
            rec = json.loads(line)
        except (ValueError, RecursionError):
            continue
        if isinstance(rec, dict):
            records.append(rec)
    return records, offset + end


class RecordsReader:
    """Reads a run's metrics.jsonl incrementally, as TensorBoard's event file loader reads an event file.

    Every record is yielded once; a torn last line is left until its newline is written (waited for, never
    parsed half); the file is never read again in full, except when it was replaced by a new file (another
    inode, or shorter than what was read), and then it is read from its start.
    """

    def __init__(self, run_dir: Path, offset: int = 0, max_bytes: int | None = None) -> None:
        self.path = Path(run_dir) / RECORDS
        self.offset = offset
        self.max_bytes = max_bytes
        self._inode: int | None = None

    def _replaced(self) -> bool:
        try:
            st = os.stat(self.path, follow_symlinks=False)
        except OSError:
            return False
        replaced = (self._inode is not None and st.st_ino != self._inode) or st.st_size < self.offset
        self._inode = st.st_ino
        return replaced

    def load(self) -> Iterator[dict[str, Any]]:
        """The records written since the last call, in file order (none when the file is missing)."""
        if self._replaced():
            self.offset = 0
        records, self.offset = read_records(self.path.parent, self.offset, self.max_bytes)
        yield from records

    def read_new(self) -> list[dict[str, Any]]:
        """`list(load())`: the new records."""
        return list(self.load())


class RunFolder:
    """One run's folder: its files' places, and reading and writing them through the runstore modules."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)

    def __repr__(self) -> str:
        return f"RunFolder({str(self.path)!r})"

    # -- places ---------------------------------------------------------------------------------------
    @property
    def config_path(self) -> Path:
        """config.json."""
        return self.path / CONFIG

    @property
    def status_path(self) -> Path:
        """status.json."""
        return self.path / STATUS

    @property
    def records_path(self) -> Path:
        """metrics.jsonl."""
        return self.path / RECORDS

    @property
    def final_metrics_path(self) -> Path:
        """final_metrics.json."""
        return self.path / FINAL_METRICS

    @property
    def checkpoints(self) -> Path:
        """ckpt/: where the training process keeps its checkpoints, one folder a step."""
        return self.path / CHECKPOINTS

    @property
    def tensorboard(self) -> Path:
        """tb/: the run's TensorBoard event files."""
        return self.path / TENSORBOARD

    @property
    def artifacts(self) -> Path:
        """artifacts/: the run's media (tables, images, texts, histograms)."""
        return self.path / ARTIFACTS

    @property
    def launch_path(self) -> Path:
        """launch.json (written by the page before the process starts)."""
        return self.path / LAUNCH

    @property
    def log_path(self) -> Path:
        """process.log."""
        return launch_files.process_log(self.path)

    @property
    def output_path(self) -> Path:
        """output.log: a client script's console output (`runstore.run_output`)."""
        return self.path / OUTPUT

    # -- reading --------------------------------------------------------------------------------------
    def has_config(self) -> bool:
        """Whether the run's process wrote config.json."""
        return self.config_path.exists()

    def has_records(self) -> bool:
        """Whether metrics.jsonl exists (it may be a link or not regular: see `records_regular`)."""
        return self.records_path.exists()

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
        return run_store.load_json_object(self.config_path)

    def status(self) -> dict[str, Any]:
        """status.json as `run_store.read_status` reads it (a gone process's "running" is "crashed")."""
        return run_store.read_status(self.path)

    def raw_status(self, default: Any = None) -> Any:
        """status.json as written (no crash check)."""
        return atomic.read_json(self.status_path, default)

    def records(self, offset: int = 0, max_bytes: int | None = None) -> tuple[list[dict[str, Any]], int]:
        """Records from byte `offset` on and the new offset (`read_records`)."""
        return read_records(self.path, offset, max_bytes)

    def records_reader(self, max_bytes: int | None = None) -> RecordsReader:
        """A reader yielding each new record once."""
        return RecordsReader(self.path, max_bytes=max_bytes)

    def final_metrics(self) -> dict[str, Any]:
        """The ended run's final metrics: final_metrics.json, else (a run folder from before #38) the store
        writer's artifacts/final_metrics.json; {} when neither holds a JSON object."""
        for path in (self.final_metrics_path, self.artifacts / FINAL_METRICS):
            found = atomic.read_json(path, None)
            if isinstance(found, dict):
                return found
        return {}

    def stop_requested(self) -> bool:
        """Whether someone asked the run to stop."""
        return run_store.stop_requested(self.path)

    # -- writing --------------------------------------------------------------------------------------
    def update_config(self, doc: dict[str, Any]) -> None:
        """Replace config.json (atomic)."""
        atomic.atomic_write_json(self.config_path, doc)

    def replace_records(self, records: list[dict[str, Any]]) -> None:
        """Replace metrics.jsonl by a new file holding `records` (atomic, fsync'd, a new inode: a
        `RecordsReader` starts over on it). Only the run's writer: a mirror starting over or rewriting."""
        atomic.atomic_write_bytes(self.records_path, atomic.metric_lines(records).encode())

    def write_final_metrics(self, final: dict[str, Any]) -> None:
        """final_metrics.json beside config.json (atomic): the ended run's final metrics, their one place."""
        atomic.atomic_write_json(self.final_metrics_path, final)

    def request_stop(self) -> None:
        """Ask the process to stop after its current chunk."""
        run_store.request_stop(self.path)

    def clear_stop(self) -> None:
        """Forget a stop request (the process, when it starts or resumes)."""
        (self.path / STOP).unlink(missing_ok=True)
