"""One warm training worker per dashboard server: a process that has already imported JAX.

`python -m training worker` (training/__main__.py) imports JAX, Flax, Optax and the tracking
backends, prints "ready", then reads one job line from stdin and runs it exactly as the CLI
would. Handing a run to a ready worker skips those seconds of imports; the worker *becomes*
the run's process (its pid is the run's pid), so every run is still its own process.

The pool keeps one worker waiting, replaces it after each hand-off and kills it when the
server exits. It starts none until the page first launches a run (that run starts cold, the worker
once it has settled): a dashboard that only views runs keeps no JAX process (~400 MB). A worker that is not ready yet, has died, or was started under settings JAX
reads only once (XLA_FLAGS, JAX_*) is not used: the launcher then starts the run cold.
No Streamlit here.
"""

from __future__ import annotations

import atexit
import collections
import json
import logging
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
# `python -m training worker` (training/runs/warm_worker.py): imports, says "ready", then runs one job through
# the CLI's own main(), so a task named by a "module:Class" spec is imported by the job itself.
WORKER_CMD = [sys.executable, "-m", "training", "worker"]
ENV_PREFIXES = ("JAXDASH_", "WANDB_", "JAX_")
ENV_KEYS = ("XLA_FLAGS", "XDG_CACHE_HOME")
# After a hand-off the next worker's imports (seconds of CPU) would slow down the run just handed
# over on a small machine (measured: first record ~1 s later on 2 busy cores), so the replacement
# starts SETTLE_S after that run has written its first metrics (time for the page to draw them),
# or REPLACE_DELAY_S after the hand-off at the latest.
REPLACE_DELAY_S = 10.0
SETTLE_S = 1.0
# Training processes started by the page run at this nice level unless $JAXDASH_NICE says otherwise
# (training/runs/warm_worker.py share_the_machine applies it): on a small machine the page keeps its CPU share
# and its charts keep updating while a run trains.
DEFAULT_NICE = "10"

log = logging.getLogger(__name__)


def job_env(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment variables a job carries to the worker (runs root, W&B, XLA/JAX, data cache)."""
    environ = os.environ if environ is None else environ
    env = {k: v for k, v in environ.items() if k.startswith(ENV_PREFIXES) or k in ENV_KEYS}
    env.setdefault("JAXDASH_NICE", DEFAULT_NICE)
    return env


def child_env() -> dict[str, str]:
    """The full environment of a training process the page starts (a worker or a cold run)."""
    return {**os.environ, "PYTHONUNBUFFERED": "1", "JAXDASH_NICE": job_env()["JAXDASH_NICE"]}


def _fixed_at_start(key: str) -> bool:
    """Variables JAX reads when it initialises its backend, which a ready worker has already done."""
    return key == "XLA_FLAGS" or key.startswith("JAX_")


class Worker:
    """One `training worker` process: importing, then ready, then (after `submit`) a run."""

    def __init__(self) -> None:
        self.env = job_env()
        self.proc = subprocess.Popen(
            WORKER_CMD,
            cwd=REPO_ROOT,
            env=child_env(),  # niced from the start: its imports must not slow down the page either
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # a run outlives the dashboard, like a cold-started one
        )
        self.output: collections.deque[str] = collections.deque(maxlen=20)  # for the log if it dies
        self.used = False
        self._ready = threading.Event()
        threading.Thread(target=self._read, name=f"worker-{self.proc.pid}", daemon=True).start()

    def _read(self) -> None:
        # Until the job redirects its stdout/stderr to process.log, the worker writes to this pipe;
        # read it to the end so it never blocks on a full pipe.
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            line = raw.decode(errors="replace").rstrip()
            if line == "ready" and not self._ready.is_set():
                self._ready.set()
            elif line:
                self.output.append(line)
        self.proc.stdout.close()

    def alive(self) -> bool:
        return self.proc.poll() is None

    def ready(self) -> bool:
        """Imports done and still waiting for a job."""
        return self._ready.is_set() and self.alive() and not self.used

    def wait_ready(self, timeout: float) -> bool:
        """Block until ready (True) or `timeout` seconds passed / the worker died (False)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.alive():
            if self._ready.wait(0.1):
                return self.ready()
        return self.ready()

    def fits(self, env: Mapping[str, str]) -> bool:
        """Whether a job with `env` runs here as it would in a fresh process.

        The job's variables are set in the worker before it runs, but one cannot be unset
        there, and XLA_FLAGS / JAX_* were already read when the worker initialised JAX.
        """
        for key in set(self.env) | set(env):
            if key in self.env and key not in env:
                return False
            if _fixed_at_start(key) and self.env.get(key) != env.get(key):
                return False
        return True

    def submit(self, argv: list[str], log_path: Path, env: Mapping[str, str], cwd: Path) -> int:
        """Hand over the job; returns the pid, which is now the run's process.

        Raises:
          OSError: the worker died (e.g. BrokenPipeError); the caller starts the run cold.
        """
        assert self.proc.stdin is not None
        self.used = True
        job = {"argv": list(argv), "log": str(log_path), "env": dict(env), "cwd": str(cwd)}
        self.proc.stdin.write((json.dumps(job) + "\n").encode())
        self.proc.stdin.flush()
        self.proc.stdin.close()
        return self.proc.pid

    def close(self) -> None:
        """Kill a worker that never got a job (a worker with a job is a run: leave it alone)."""
        if self.used:
            return
        if self.alive():
            self.proc.kill()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            pass
        if self.proc.stdin is not None:
            self.proc.stdin.close()


class WorkerPool:
    """Keeps one ready worker; thread-safe (every Streamlit session runs in its own thread).

    Args:
      replace_delay_s: after a hand-off, start the next worker at the latest this many seconds
        later (sooner once the `settled` check given to `take` holds), so its imports do not
        compete for CPU with the start of the run that was just handed over.
    """

    def __init__(self, replace_delay_s: float = REPLACE_DELAY_S) -> None:
        self.replace_delay_s = replace_delay_s
        self._lock = threading.Lock()
        self._worker: Worker | None = None
        self._not_before = 0.0
        self._settled: Callable[[], bool] | None = None
        self._waiting = False  # a thread waits to start the replacement
        self._closed = False

    @property
    def worker(self) -> Worker | None:
        """The waiting (or still importing) worker, if any."""
        return self._worker

    def ensure(self) -> None:
        """Start a worker unless one is alive (or schedule it, within `replace_delay_s` of a hand-off)."""
        with self._lock:
            if self._closed or (self._worker is not None and self._worker.alive()):
                return
            if self._worker is not None:
                out = " | ".join(self._worker.output) or "no output"
                log.warning("warm worker %s exited (%s): %s", self._worker.proc.pid, self._worker.proc.returncode, out)
                self._worker = None
            if time.monotonic() < self._not_before:
                if not self._waiting:
                    self._waiting = True
                    threading.Thread(target=self._wait_then_start, name="worker-replace", daemon=True).start()
                return
            try:
                self._worker = Worker()
            except OSError:
                log.exception("could not start a warm worker")

    def _wait_then_start(self) -> None:
        while time.monotonic() < self._not_before and not self._closed:
            try:
                if self._settled is not None and self._settled():
                    self._settled = None
                    self._not_before = min(self._not_before, time.monotonic() + SETTLE_S)
            except OSError:
                pass
            time.sleep(0.05)
        with self._lock:
            self._waiting, self._not_before, self._settled = False, 0.0, None
        self.ensure()

    def take(self, env: Mapping[str, str], settled: Callable[[], bool] | None = None) -> Worker | None:
        """The ready worker, now the caller's (the pool starts a replacement), or None.

        None when no worker is ready yet (it stays, importing, for the next launch), or when
        the waiting one cannot run `env` (it is replaced by one started with this environment).

        Args:
          env: the job's environment (`job_env()`).
          settled: polled after a hand-off; SETTLE_S after it holds (e.g. the run wrote its first
            metrics) the replacement starts, without waiting the rest of `replace_delay_s`.
        """
        with self._lock:
            w = self._worker
            if w is None and not self._waiting:  # the first launch: a worker once this cold run has settled
                taken = None
                self._not_before = time.monotonic() + self.replace_delay_s
                self._settled = settled
            elif w is None or not w.ready():
                taken = None
            elif not w.fits(env):
                w.close()
                self._worker = taken = None
            else:
                self._worker, taken = None, w
                self._not_before = time.monotonic() + self.replace_delay_s
                self._settled = settled
        self.ensure()
        return taken

    def close(self) -> None:
        """Kill the waiting worker and start no more (at server exit)."""
        with self._lock:
            self._closed = True
            w, self._worker = self._worker, None
        if w is not None:
            w.close()


_POOL: WorkerPool | None = None
_POOL_LOCK = threading.Lock()


def pool() -> WorkerPool:
    """This server's pool (created on first use; its worker is killed at exit)."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = WorkerPool()
            atexit.register(_POOL.close)
        return _POOL


def enabled() -> bool:
    """Warm workers are on unless JAXDASH_WARM_WORKER=0."""
    return os.environ.get("JAXDASH_WARM_WORKER", "1") != "0"


def warm_up() -> None:
    """Keep a worker importing or waiting once the page has launched a run (cheap: call it on every page run).

    Before the first launch there is no pool and nothing starts: an idle dashboard keeps no JAX process."""
    if enabled() and _POOL is not None:
        _POOL.ensure()
