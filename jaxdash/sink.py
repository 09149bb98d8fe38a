"""TensorBoard and W&B written by an idle-priority child process, so a tracked loop barely pays for them.

`wandb.log` and tensorboardX's `add_scalar` cost a per-step Python loop 57-64% of its speed here
(benchmarks/log_overhead.py), and even on jaxdash's fetch thread they held the GIL and a core the
loop wanted (0.66x with both, 0.99x with the run store alone). So the training process keeps only
the run store (what the dashboard reads, required) and hands every other call, batched once per
flush, to `python -m jaxdash.sink_process` over a pipe it never waits on (`jaxdash.pipe_feed`): a
process at idle priority (SCHED_IDLE: measured here, a spinning SCHED_IDLE process cost a per-step
loop ~2-4% where a nice 19 one cost ~20%) that owns the TensorBoard and W&B writers and writes an
offline W&B copy while the script pauses (`jaxdash.sink_process`). Its failures never reach training
(a warning, then the run store alone); if the training process dies (kill -9), the sink sees the
pipe close, closes its writers as "crashed" and exits.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import pickle
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import psutil

from jaxdash.pipe_feed import PipeFeed
from runstore.run_folder import RunFolder
from runwriters.base import MetricWriter

log = logging.getLogger("jaxdash")
NICE = 19  # where SCHED_IDLE is missing
CLOSE_TIMEOUT_S = 60.0  # W&B's offline finish writes its summary and history; rarely more than a few s


class SinkWriter(MetricWriter):
    """A MetricWriter whose calls run in the sink process: buffered, sent as one message per flush."""

    def __init__(self, opening: Mapping[str, Any], on_info: Callable[[dict[str, Any]], None],
                 wandb_settings: dict[str, str | None] | None = None) -> None:  # fmt: skip
        """opening: `runwriters.build.build_writer`'s arguments for the writers the sink builds (run_dir, cfg, name,
        tracking, resume_step); on_info: called with their info (logdir, W&B mode, url); wandb_settings: W&B's
        variables for the sink's environment."""
        self._run_dir = Path(opening["run_dir"])
        self._calls: list[tuple[str, tuple]] = []
        self._lock = threading.Lock()
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "jaxdash.sink_process"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            cwd=os.getcwd(),
            env=_sink_env(wandb_settings or {}),
        )
        lowest_priority(self._proc.pid)  # set here, before anything can lift it again (`close`)
        self._feed = PipeFeed(self._proc.stdin, self._sink_died)  # a full pipe blocks its thread, not the caller
        self._send([("open", ({**opening, "run_dir": str(self._run_dir)},))])
        self._heard_at = 0.0  # monotonic time of the sink's last line (its info, then its progress at the end)
        self._info_thread = threading.Thread(target=self._read_lines, args=(on_info,), daemon=True)
        self._info_thread.start()

    def _read_lines(self, on_info: Callable[[dict[str, Any]], None]) -> None:
        """The sink's first line is its writers' info (`on_info`); each later one says its end moves on."""
        first = True
        for line in self._proc.stdout or []:
            self._heard_at = time.monotonic()
            if first:
                first = False
                with contextlib.suppress(ValueError, OSError):
                    on_info(json.loads(line))

    def _send(self, calls: list[tuple[str, tuple]]) -> None:
        if not self._feed.failed:  # once the sink ended, nothing is pickled for it
            self._feed.send(pickle.dumps(calls, protocol=pickle.HIGHEST_PROTOCOL))

    def _sink_died(self, exc: Exception) -> None:
        """A write to the sink failed: it ended (the feed drops what follows). The run store still has every step."""
        log.warning("jaxdash: the TensorBoard/W&B writer process ended (%s); the run store goes on alone", exc)

    def _queue(self, method: str, *args: Any) -> None:
        with self._lock:
            self._calls.append((method, args))

    def write_hparams(self, hparams):  # noqa: D102, ANN001
        self._queue("write_hparams", dict(hparams))

    def write_scalars(self, step, scalars, progress=None):  # noqa: D102, ANN001
        self._queue("write_scalars", step, dict(scalars), progress)

    def write_scalar_rows(self, steps, columns, progress=None):  # noqa: D102, ANN001
        self._queue("write_scalar_rows", steps, dict(columns), progress)  # arrays: one cheap pickle per block

    def write_histograms(self, step, arrays):  # noqa: D102, ANN001
        self._queue("write_histograms", step, dict(arrays))

    def write_images(self, step, images):  # noqa: D102, ANN001
        self._queue("write_images", step, dict(images))

    def write_texts(self, step, texts):  # noqa: D102, ANN001
        self._queue("write_texts", step, dict(texts))

    def write_values(self, step, values):  # noqa: D102, ANN001
        self._queue("write_values", step, dict(values))

    def write_tables(self, step, tables):  # noqa: D102, ANN001
        self._queue("write_tables", step, dict(tables))

    def write_figures(self, step, figures):  # noqa: D102, ANN001
        self._queue("write_figures", step, dict(figures))  # W&B keeps them as wandb.Plotly; TensorBoard lacks them

    def write_charts(self, step, charts):  # noqa: D102, ANN001
        self._queue("write_charts", step, dict(charts))  # W&B draws them; TensorBoard gets their tables as text

    def write_summary(self, metrics):  # noqa: D102, ANN001
        self._queue("write_summary", dict(metrics))

    def write_run_summary(self, summary: dict[str, Any], nested: list[str] | None = None) -> None:
        """The run's summary as W&B keeps it (strings and {"min": ..} dicts too) for the W&B copy, at its end;
        `nested`: the row keys ("a.b") the summary holds nested instead."""
        self._queue("wandb_summary", dict(summary), list(nested or []))

    def define_metric(self, name: str, options: dict[str, Any]) -> None:
        """The script's `define_metric` for the W&B copy."""
        self._queue("wandb_define_metric", name, dict(options))

    def copy_call(self, call: str, *args: Any) -> None:
        """One of the script's run calls for the W&B copy (jaxdash.wandb_copy.CALLS: alert, save, log_artifact)."""
        self._queue(f"wandb_{call}", *args)

    def send_output(self, chunks: list[tuple[str, str, float]]) -> None:
        """The script's console output for the W&B copy's Logs (`jaxdash.console_capture`), sent now, on its own:
        (stream, text, time written) chunks, in order."""
        with self._lock:
            self._send([("wandb_output", (list(chunks),))])

    def flush(self) -> None:
        """Send what was written since the last flush, as one message."""
        with self._lock:
            calls, self._calls = self._calls, []
            self._send([*calls, ("flush", ())])

    def close(self, state: str = "finished", message: str | None = None) -> None:
        """Send the rest and the end; wait for the sink to close its writers (at most CLOSE_TIMEOUT_S)."""
        with self._lock:
            calls, self._calls = self._calls, []
            self._send([*calls, ("close", (state, message))])
        normal_priority(self._proc.pid)  # the run ended: nothing trains any more to leave cores to
        if not self._feed.close(CLOSE_TIMEOUT_S) or not self._ended():  # the rest written, stdin closed
            self._proc.kill()
            self._record_gap()

    def _ended(self) -> bool:
        """Wait for the sink to end while it shows progress: False once it said nothing for CLOSE_TIMEOUT_S
        (a W&B copy catching up with a long run says how far it got every second)."""
        since = time.monotonic()
        while True:
            try:
                self._proc.wait(0.5)
                return True
            except subprocess.TimeoutExpired:
                if time.monotonic() - max(since, self._heard_at) > CLOSE_TIMEOUT_S:
                    return False

    def _record_gap(self) -> None:
        """The sink was stopped before it had written everything: say so in one line and as a run event, so the
        page and the run's history show that its TensorBoard files and W&B copy may lack the last rows."""
        note = (
            f"the TensorBoard/W&B writer process did not end in {CLOSE_TIMEOUT_S:.0f} s of its last progress and "
            "was stopped (it runs at idle priority: other processes kept the cores busy); the run store has every "
            "step, but the last rows may be missing from TensorBoard and the W&B copy"
        )
        log.warning("jaxdash: %s", note)
        with contextlib.suppress(OSError, ValueError):
            RunFolder(self._run_dir).add_event("write_gap", note, writer="sink")


def _sink_env(settings: dict[str, str | None]) -> dict[str, str]:
    """The sink's environment: the script's, with the run's W&B `settings` (set, or removed when empty:
    `jaxdash.init_settings` already read the script's WANDB_* variables into them, explicit arguments first),
    W&B's per-call telemetry off unless set, less WANDB_SERVICE: a script that called `wandb.init` itself has a W&B service at normal
    priority; the sink starts its own, idle-priority one."""
    env = {k: v for k, v in os.environ.items() if k != "WANDB_SERVICE"}
    # wandb's own telemetry records every `log` call through OpenTelemetry: half of its 220 us per
    # row here (measured: 104 us without). Off in the writer process unless the user set it.
    env.setdefault("WANDB_ERROR_REPORTING", "false")
    for key, value in settings.items():
        if value:
            env[key] = str(value)
        else:
            env.pop(key, None)
    return env


def lowest_priority(pid: int) -> None:
    """Run process `pid` only where a core would idle: SCHED_IDLE on Linux (its later threads and W&B's service
    process inherit it), else nice 19. Set by the training process right after it starts the sink, so a run
    that ends at once (`normal_priority` at close) can never be followed by the sink lowering itself."""
    try:
        os.sched_setscheduler(pid, os.SCHED_IDLE, os.sched_param(0))
    except (AttributeError, OSError):
        with contextlib.suppress(OSError):
            os.setpriority(os.PRIO_PROCESS, pid, NICE)


def normal_priority(pid: int) -> None:
    """Move process `pid`'s threads and its descendants' (W&B's service) from SCHED_IDLE to normal priority: at a
    run's end the sink may still hold rows, and on cores kept busy by other processes an idle-priority process
    is not scheduled at all, so the copy would wait for CLOSE_TIMEOUT_S and lose its last rows. Where the system
    forbids leaving SCHED_IDLE (an unprivileged user whose RLIMIT_NICE is 0) they stay idle."""
    try:
        pids = [pid, *(p.pid for p in psutil.Process(pid).children(recursive=True))]
    except psutil.Error:
        return
    for each in pids:
        with contextlib.suppress(OSError):
            for tid in os.listdir(f"/proc/{each}/task"):
                with contextlib.suppress(OSError, AttributeError):
                    if os.sched_getscheduler(int(tid)) == os.SCHED_IDLE:
                        os.sched_setscheduler(int(tid), os.SCHED_OTHER, os.sched_param(0))
