"""The writer process of a client run (`python -m jaxdash.sink_process`): TensorBoard and the W&B copy.

`jaxdash.sink.SinkWriter` in the training process starts it at idle priority (SCHED_IDLE) and sends it one
pickled list of writer calls per flush over a pipe. It builds the writers from the first message and replays every
call on them. TensorBoard is written as the calls come. An offline W&B copy is written while the script
pauses: wandb-core's work for a row (~60 us of CPU, `benchmarks/wandb_rows.py`) taken from a loop that
logs thousands of rows a second costs it a tenth of its speed even at idle priority (`benchmarks/
log_overhead.py`), so while calls keep coming, the copy's share is spooled to a temporary file, in order,
and replayed once the script has logged nothing for PAUSE_S (an evaluation, a checkpoint, the end). An
online copy (a W&B user watching the cloud) is written as the calls come. The run's end waits for the copy
to catch up (`SinkWriter.close`, which this process keeps informed with a line on stdout a second); if the
training process dies (kill -9), the pipe closes: the spool is replayed, then the writers close as "crashed".
"""

from __future__ import annotations

import json
import logging
import pickle
import queue
import sys
import tempfile
import threading
import time
from typing import Any

from jaxdash import wandb_copy

PAUSE_S = 1.0  # the script sent nothing for this long: the W&B copy catches up
SLICE_S = 0.05  # catch-up work between looks at the pipe, so a new message waits at most this long
ALIVE_S = 1.0  # while the end catches up, a line on stdout this often tells `SinkWriter.close` it moves on
EMPTY = object()  # `Inbox.get`: nothing came within the timeout


class Inbox:
    """The pipe's messages, read on a thread of their own: `get` waits with a timeout (None at the end)."""

    def __init__(self, stdin: Any) -> None:
        self._messages: queue.SimpleQueue = queue.SimpleQueue()
        threading.Thread(target=self._read, args=(stdin,), name="jaxdash-sink-inbox", daemon=True).start()

    def _read(self, stdin: Any) -> None:
        while True:
            try:
                self._messages.put(pickle.load(stdin))
            except (EOFError, pickle.UnpicklingError, OSError, ValueError):
                self._messages.put(None)  # the training process closed the pipe or is gone (kill -9)
                return

    def get(self, timeout: float | None) -> Any:
        """The next message (a list of calls), None once the pipe closed, EMPTY if none came within `timeout`."""
        try:
            return self._messages.get(timeout=timeout)
        except queue.Empty:
            return EMPTY

    def waiting(self) -> bool:
        """Whether a message (or the pipe's end) waits to be taken."""
        return not self._messages.empty()


class Spool:
    """Calls kept for later in a temporary file, in order (`add`, then `take` from the oldest)."""

    def __init__(self) -> None:
        self._file = tempfile.TemporaryFile(prefix="jaxdash-wandb-copy-")
        self._read_at = self._write_at = 0
        self.pending = 0  # calls added and not yet taken

    def add(self, calls: list[tuple[str, tuple]]) -> None:
        """Keep `calls` after those kept before."""
        self._file.seek(self._write_at)
        pickle.dump(calls, self._file, protocol=pickle.HIGHEST_PROTOCOL)
        self._write_at = self._file.tell()
        self.pending += len(calls)

    def take(self) -> list[tuple[str, tuple]]:
        """The oldest list of calls kept (the file starts over once every list is taken)."""
        self._file.seek(self._read_at)
        calls = pickle.load(self._file)
        self._read_at = self._file.tell()
        self.pending -= len(calls)
        if self._read_at == self._write_at:
            self._file.seek(0)
            self._file.truncate()
            self._read_at = self._write_at = 0
        return calls


class Writers:
    """The writers the first message opens, split in two: `now` (TensorBoard, and an online W&B copy) takes
    every call as it comes; `later` (an offline W&B copy, or None) takes them from the spool."""

    def __init__(self, opening: dict[str, Any], stdout: Any) -> None:
        from runwriters.base import MultiWriter, NullWriter
        from runwriters.build import build_writer

        writer, info = build_writer(**opening)
        wandb_copy.adapt(writer)
        print(json.dumps(info, default=str), file=stdout, flush=True)
        offline = [w for w in wandb_copy.wandb_writers(writer) if w.info.get("mode") == "offline"]
        self.now = MultiWriter([NullWriter(), *(w for w in writer.writers[1:] if w not in offline)])
        self.later = MultiWriter([NullWriter(), *offline]) if offline else None
        self.summary: tuple | None = None  # the script's summary for the W&B copy, set at its end

    def later_ready(self) -> bool:
        """Whether the W&B copy can take the spool: its run exists (rows replayed before would wait in it until
        the next call), or its init failed (the calls are dropped)."""
        return all(w.wait_ready(0) or not w.active for w in wandb_copy.wandb_writers(self.later))

    def apply(self, target: Any, method: str, args: tuple) -> None:
        """One call on `target` (`now` or `later`): a writer method, or one of the W&B copy's own calls."""
        if method == "wandb_summary":
            self.summary = args
        elif method == "wandb_output":
            wandb_copy.output(target, *args)
        elif method == "wandb_define_metric":
            wandb_copy.define_metric(target, *args)
        elif method.startswith("wandb_") and method[len("wandb_") :] in wandb_copy.CALLS:
            wandb_copy.call(target, method[len("wandb_") :], args)
        elif method == "close":
            wandb_copy.close(target, self.summary, args[0] if args else "finished")
            target.close(*args)
        else:
            getattr(target, method)(*args)

    def route(self, calls: list[tuple[str, tuple]], spool: Spool) -> None:
        """Apply `calls` to `now` (W&B's own calls only where no copy waits in the spool); keep the spool's."""
        if self.later is None:
            for method, args in calls:
                self.apply(self.now, method, args)
            return
        for method, args in calls:
            if not method.startswith("wandb_"):
                self.apply(self.now, method, args)
        spool.add(calls)


def serve(stdin: Any = None, stdout: Any = None) -> int:
    """The writer process: build the writers from the first message, then replay every call until the end."""
    from runwriters.wandb import run as wandb_run

    wandb_run.PRELOAD_PANDAS = False  # a first table or figure imports it here, where no training waits on it
    wandb_run.OWN_CONSOLE = False  # the copy's Logs are the script's output (wandb_output), never this process's
    stdin, stdout = stdin or sys.stdin.buffer, stdout or sys.stdout
    inbox, spool, writers = Inbox(stdin), Spool(), None
    while True:
        message = inbox.get(PAUSE_S if spool.pending else None)
        if message is EMPTY:
            catch_up(writers, spool, inbox)
            continue
        if message is None:
            break  # the training process is gone: what is spooled is replayed, then the writers close
        if writers is None and message and message[0][0] == "open":
            writers, message = Writers(message[0][1][0], stdout), message[1:]
        if writers is None:
            continue
        writers.route(message, spool)
        if any(method == "close" for method, _ in message):
            catch_up(writers, spool, None, stdout)
            return 0
    if writers is not None:
        catch_up(writers, spool, None, stdout)
        crashed = ("crashed", "The training process ended without finishing the run.")
        for target in (writers.now, writers.later):
            if target is not None:
                target.close(*crashed)
    return 0


def catch_up(writers: Writers | None, spool: Spool, inbox: Inbox | None, stdout: Any = None) -> None:
    """Replay the spool on the W&B copy: in a pause, slice by slice until a message comes (`inbox`: it is
    handled first, the rest waits for the next pause; nothing while the copy's run is still starting); at the
    end (no `inbox`) all of it, with a line on `stdout` every ALIVE_S."""
    if inbox is not None and writers is not None and writers.later is not None and not writers.later_ready():
        return
    alive_at = time.monotonic()
    while spool.pending and writers is not None and writers.later is not None:
        sliced_at = time.monotonic()
        while True:  # one slice: at least one message's calls
            for method, args in spool.take():
                writers.apply(writers.later, method, args)
            if not spool.pending or time.monotonic() - sliced_at >= SLICE_S:
                break
        if inbox is not None and inbox.waiting():
            return
        if inbox is not None and not spool.pending:
            wandb_copy.log_rows(writers.later)  # the pause's last rows, whatever the copy's flush interval
        elif stdout is not None and time.monotonic() - alive_at >= ALIVE_S:
            alive_at = time.monotonic()
            print(json.dumps({"copy_calls_left": spool.pending}), file=stdout, flush=True)


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    sys.exit(serve())
