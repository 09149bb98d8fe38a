"""The event files of a TensorBoard logdir, read off the page's thread with a time limit.

A sync (runstore/tb_logdir.py) queues a read of each event file that changed since its last read;
at most MAX_THREADS daemon threads take them in turn. It waits READ_LIMIT_S at most and takes what
finished: each file's new scalar events, or why it cannot be read (`EventFile.damage`, one line
naming the file). A read that does not finish (a stalled disk or network mount) holds one thread
and its file's row ("no answer within ..."); the file is queued again once that read answers. The
bytes come through runstore/event_files.py (bounded). No JAX, no Streamlit.
"""

from __future__ import annotations

import collections
import os
import stat
import threading
import time
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from runstore import tb_media, tb_tensors
from runstore.event_files import BoundedEventFileLoader, DamagedEventFile

MAX_THREADS = 4  # reading threads of one sync (each holds at most one record and its parse: event_files.MAX_RECORD)
READ_LIMIT_S = 5.0  # how long a sync waits for its reads; a read without a record for this long is its run's damage
Event = tuple[float, int, list[tuple[str, float]]]  # wall time, step, scalar values (tags with the split prefix)


def scalars(event: Any) -> list[tuple[str, float]]:
    """The scalar values of one event: simple_value (tensorboardX, TF1) or a one-element tensor (TF2, CLU)."""
    out = []
    for value in event.summary.value:
        if value.HasField("simple_value"):
            out.append((value.tag, float(value.simple_value)))
        elif value.HasField("tensor") and value.metadata.plugin_data.plugin_name in ("scalars", ""):
            if any(d.size != 1 for d in value.tensor.tensor_shape.dim):
                continue  # not one value; a claimed shape is never expanded (2**40 elements from one float_val)
            array = tb_tensors.to_array(value.tensor)  # None: content that does not fit its shape or dtype
            if array is not None and array.size == 1 and array.dtype.kind in "fiu":
                out.append((value.tag, float(array.reshape(()))))
    return out


def read_new(loader: BoundedEventFileLoader, prefix: str) -> tuple[list[Event], BaseException | None]:
    """The scalar events appended to an event file since its last read (all of it the first time), and the
    error that stopped the read early (None if it read to the end): events before a damaged record are kept.
    The events' images, histograms, text and hparams (runstore/tb_media.py) go to `loader.media` if it is set,
    their tensors within one budget (runstore/tb_tensors.py): once half of it is taken, the read stops after the
    record in hand and the next sync reads on, so the media held between two writes stay bounded."""
    media: list[tb_media.Item] | None = getattr(loader, "media", None)
    budget = tb_tensors.Budget()
    events = []
    try:
        for event in loader.Load():
            if media is not None:
                media += tb_media.safe_media_of(event, prefix, budget)
                if budget.spent:
                    loader.reader.pause()
            values = scalars(event)
            if values:
                tagged = [(tag if tag.startswith(prefix) else prefix + tag, v) for tag, v in values]
                events.append((event.wall_time, int(event.step), tagged))
    except (Exception, MemoryError) as exc:  # a parser's error or MemoryError included: the file's row says it
        return events, exc
    return events, None


def file_key(path: Path) -> tuple:
    """What changes when a file is written to or replaced (lstat: nothing is opened); () if it is gone."""
    try:
        st = os.lstat(path)
    except OSError:
        return ()
    return (st.st_ino, st.st_size, st.st_mtime_ns, stat.S_IFMT(st.st_mode))


def why(exc: BaseException) -> str:
    """One line saying why an event file could not be read."""
    if isinstance(exc, DamagedEventFile):
        return str(exc)
    if isinstance(exc, MemoryError):
        return "out of memory while reading it"
    if isinstance(exc, OSError):
        return exc.strerror or str(exc)
    return f"not a TensorBoard event file ({type(exc).__name__}: {exc})"[:300]


class EventFile:
    """One event file's loader (kept so the next read takes only what was appended) and its read in flight."""

    def __init__(self, path: Path, logdir: Path, prefix: str) -> None:
        self.path, self.prefix = Path(path), prefix
        self.name = self.path.relative_to(logdir).as_posix()  # as its damage message names it
        self.loader = BoundedEventFileLoader(self.path, Path(logdir))
        self.key: tuple = ()  # file_key when the last read started: unchanged, there is nothing new
        self.future: Future | None = None  # the read in flight, queued or running
        self.started: float | None = None  # when a reading thread began it
        self.damage: str | None = None  # "<file>: <why>" while it cannot be read
        self.media: list[tb_media.Item] = []  # the last finished read's images, histograms, text, hparams
        self._reading: list[tb_media.Item] = []  # filled by the read in flight

    def due(self) -> Future | None:
        """A new read's future if the file changed since the last read and none is in flight (`run` answers it)."""
        key = file_key(self.path)
        if self.future is not None or key == self.key:
            return None
        self.future, self.key, self.started, self._reading = Future(), key, None, []
        return self.future

    def run(self) -> None:
        """Read what was appended (on a reading thread) and answer the future `due` gave."""
        future = self.future
        assert future is not None
        self.started = time.monotonic()
        try:
            self.loader.media = self._reading  # type: ignore[attr-defined]  # read_new fills it
            future.set_result(read_new(self.loader, self.prefix))
        except BaseException as exc:  # never left unanswered
            future.set_exception(exc)

    def take_media(self) -> list[tb_media.Item]:
        """The media of the last finished read, once (a sync writes them to the mirror)."""
        media, self.media = self.media, []
        return media

    def collect(self) -> list[Event] | None:
        """The events of the finished read ([] while it runs, or on damage: see `damage`); None if the file is gone."""
        if self.future is None or not self.future.done():
            running = self.future is not None and self.started is not None
            if running and time.monotonic() - max(self.started, self.loader.reader.progress_at) > READ_LIMIT_S:
                self.damage = f"{self.name}: no answer within {READ_LIMIT_S:.0f} s (a stalled disk or mount?)"
            return []
        future, self.future, self.started = self.future, None, None
        self.media, self._reading = self._reading, []
        try:
            events, error = future.result()
        except BaseException as exc:
            events, error = [], exc
        if isinstance(error, FileNotFoundError) and not os.path.lexists(self.path):
            return None  # deleted since it was listed (a link to nothing stays, as its run's damage)
        self.damage = f"{self.name}: {why(error)}" if error is not None else None
        if self.loader.reader.more:
            self.key = ()  # stopped at its read budget: the next sync reads on, though the file did not change
        return events


def open_for_writing(paths: list[Path]) -> set[str] | None:
    """The real paths among `paths` that a process on this machine holds open (a TensorBoard writer keeps its
    event file open until it closes or exits), read from /proc/<pid>/fd; None where /proc cannot tell (not Linux).
    A writer on another machine (a shared mount) or of another user (its /proc/<pid>/fd hidden) is not seen."""
    wanted = {os.path.realpath(p) for p in paths}
    try:
        pids = [p for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return None
    held: set[str] = set()
    for pid in pids:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue  # gone, or another user's
        for fd in fds:
            try:
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if target in wanted:
                held.add(target)
    return held


def start_reads(files: list[EventFile]) -> list[Future]:
    """Reads of the files that changed, on at most MAX_THREADS daemon threads taking them in turn: a file that
    never answers holds one thread, the others go on. Returns their futures."""
    due = [f for f in files if f.due() is not None]
    queue = collections.deque(due)

    def work() -> None:
        while True:
            try:
                entry = queue.popleft()  # thread-safe
            except IndexError:
                return
            entry.run()

    for _ in range(min(MAX_THREADS, len(due))):
        threading.Thread(target=work, name="jaxdash-logdir-read", daemon=True).start()
    return [f.future for f in due if f.future is not None]
