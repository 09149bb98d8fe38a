"""One run for a job of many processes (`jax.distributed`): process 0 owns it, the others report to it.

Under `jax.distributed.initialize(...)` with two or more processes, `jaxdash.init` on process 0
makes the run folder and its writers (run store, TensorBoard, the W&B copy) as in one process, and
tells the others the run's id through JAX's coordination service (its key-value store, which
Orbax's multi-process checkpoints use too). On the others `init` returns a `FollowerRun`: the
same id and name, no folder, no writer; its `log` only counts the step (no device sync, nothing
written), which is TensorBoard's and W&B's "log from process 0" built in. Every process's
heartbeat and system metrics reach the run (`training.runs.host_watch`): `sys/host<k>/...` rows and
hosts.json, and a process that dies makes the run crashed, naming its host.

`should_stop()` is a collective here: every process calls it at the same points and all get process
0's answer (one round trip to the coordinator each), so a Stop from the page ends every process
after the same step instead of leaving some in a collective the others never join.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from jaxdash.client import Run
from jaxdash.client_files import RunPath
from jaxdash.wandb_config import Config
from jaxdash.wandb_summary import Summary
from training.runs.coordination import Coordination
from training.runs.host_watch import Beats, HostColumns, Hub

INIT_TIMEOUT_S = 300  # a process waits this long for process 0's run (JAX's own initialization timeout)
_INITS = [0]  # `init` calls of this process: the n-th call of every process makes one run


class Job:
    """This process's place in a `jax.distributed` job: its index, the process count, the coordinator."""

    def __init__(self, index: int, count: int, kv: Coordination) -> None:
        self.index, self.count, self.kv = index, count, kv

    def lead(self, run: LeadRun) -> None:
        """Process 0: tell the others the run's id, and start watching them."""
        run._attach(self)
        self.kv.set("run", json.dumps({"id": run.id, "name": run.name, "project": run.project, "step": run.step,
                                       "resumed": run.resumed}))  # fmt: skip

    def follow(self, config: Mapping[str, Any], runs_root: Path) -> FollowerRun:
        """Any other process: process 0's run, once process 0 made it."""
        doc = self.kv.get("run", INIT_TIMEOUT_S)
        if doc is None:
            raise RuntimeError(f"jaxdash.init on process {self.index}: process 0 made no run within "
                               f"{INIT_TIMEOUT_S} s; call jaxdash.init in every process (or in process 0 only)")  # fmt: skip
        return FollowerRun(self, json.loads(doc), config, runs_root)

    def agreed_stop(self, call: int) -> bool:
        """Process 0's answer to its `call`-th should_stop (True once process 0's run has ended)."""
        while (value := self.kv.get(f"stop/{call}", 1.0)) is None:
            if self.kv.try_get("ended") is not None:
                return True
        if self.count == 2:
            self.kv.delete(f"stop/{call}")  # its only reader
        elif self.kv.increment(f"acks/{call}") >= self.count - 1:  # the last to read it clears it
            self.kv.delete(f"stop/{call}")
            self.kv.delete(f"acks/{call}")
        return value == "1"


def job() -> Job | None:
    """This process's job, or None outside `jax.distributed` (or with one process). Counts `init` calls."""
    jax = sys.modules.get("jax")  # a script under jax.distributed imported JAX already; never imported here
    if jax is None:
        return None
    try:
        if not jax.distributed.is_initialized():
            return None
        # Ids from the distributed state, not jax.process_index(): that would start the backend here,
        # before the script's own settings. Its client is the coordination service's (as Orbax uses it).
        from jax._src import distributed

        state = distributed.global_state
        index, count, client = int(state.process_id), int(state.num_processes), state.client
    except (AttributeError, ImportError, TypeError, ValueError):
        return None
    if client is None or count < 2:
        return None
    _INITS[0] += 1
    return Job(index, count, Coordination(client, f"jaxdash/{_INITS[0]}/"))


class LeadRun(Run):
    """Process 0's run: a `Run` that watches the job's hosts and agrees `should_stop` with them."""

    _job: Job | None = None
    _hub: Hub | None = None
    _calls = 0

    def _attach(self, job: Job) -> None:
        self._job, self._hub = job, Hub(self.dir, job.kv, job.count)
        self._writer = HostColumns(self._writer.writers, self._hub)
        self._hub.start()

    def should_stop(self) -> bool:
        """As `Run.should_stop`, and the answer handed to every process's same call."""
        stop = super().should_stop()
        if self._hub is not None and not self._hub.solo:
            self._job.kv.set(f"stop/{self._calls}", "1" if stop else "0")
        self._calls += 1
        return stop

    def _end_state(self, state: str, message: str | None) -> tuple[str, str | None]:
        """A lost host makes the run crashed (a failed one, failed), whatever process 0's own end."""
        verdict = self._hub.verdict() if self._hub is not None else None
        self._own_end = (state, message)
        return verdict or (state, message)

    def _end(self, exit_code: int, message: str | None) -> None:
        if self._finished or self._hub is None:
            super()._end(exit_code, message)
            return
        self._hub.stop()  # the others' last heartbeats in before the last rows
        super()._end(exit_code, message)
        self._hub.close(*getattr(self, "_own_end", ("finished", None)))
        try:
            self._job.kv.set("ended", "1")  # a process waiting in should_stop stops
            if self._hub.solo:
                self._job.kv.delete("stop/")
        except Exception:  # noqa: BLE001, S110 - the coordinator going away ends the others anyway
            pass


class FollowerRun:
    """Process k > 0's run: process 0's id and name; `log` counts steps and writes nothing (W&B's attributes kept)."""

    disabled = False
    offline = False
    url = None

    def __init__(self, job: Job, doc: Mapping[str, Any], config: Mapping[str, Any], runs_root: Path) -> None:
        self.id, self.name, self.project = str(doc["id"]), str(doc.get("name") or doc["id"]), doc.get("project") or ""
        self.entity, self.group, self.job_type, self.notes, self.tags = "", "", "", None, ()
        self.dir = RunPath(Path(runs_root) / self.id)  # process 0's folder, where the runs root is shared
        self.process_index, self.resumed = job.index, bool(doc.get("resumed"))
        self.config, self.summary = Config(config), Summary(dict, lambda: None)
        self._job, self._step, self._calls = job, int(doc.get("step") or 0), 0  # a resumed run goes on from there
        self._finished = self._stopped = False
        self._beats = Beats(job.kv, job.index)

    @property
    def step(self) -> int:
        """The step the next `log` writes, counted as process 0 counts it."""
        return self._step

    @property
    def finished(self) -> bool:
        """True once `finish` ran."""
        return self._finished

    def log(self, data: Any, step: int | None = None, commit: bool | None = None, sync: bool | None = None) -> None:
        """Counts the step (W&B's rules); nothing is read from the device, nothing written."""
        if type(step) is int and step > self._step:
            self._step = step
        if commit or (commit is None and step is None):
            self._step += 1

    def log_chunk(self, metrics: Mapping[str, Any], first_step: int | None = None) -> None:
        """Counts the chunk's steps (its arrays' leading axis, known without a device sync)."""
        lengths = {int(np.shape(v)[0]) for v in metrics.values() if np.ndim(v) >= 1} if metrics else set()
        start = first_step if type(first_step) is int and first_step > self._step else self._step
        self._step = start + (lengths.pop() if len(lengths) == 1 else 0)

    def should_stop(self) -> bool:
        """Process 0's answer to the same call (the page's Stop reaches every process at the same step)."""
        if not self._stopped and not self._finished:
            self._stopped = self._job.agreed_stop(self._calls)
            self._calls += 1
        return self._stopped

    def finish(self, exit_code: int | None = None, quiet: bool | None = None) -> None:
        """Sends this process's end to process 0 (finished, stopped or failed)."""
        self._end(int(exit_code or 0), None)

    def _end(self, exit_code: int, message: str | None) -> None:
        if self._finished:
            return
        self._finished = True
        state = "failed" if exit_code else "stopped" if self._stopped else "finished"
        self._beats.stop(state, message or (f"exit code {exit_code}" if exit_code else None))

    def __enter__(self) -> FollowerRun:
        return self

    def __exit__(self, kind: type | None, exc: BaseException | None, tb: Any) -> bool:
        self._end(1 if exc is not None and not isinstance(exc, KeyboardInterrupt) else 0, None)
        return False

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return _noop  # save, alert, define_metric, log_artifact...: process 0's to do


def _noop(*args: Any, **kwargs: Any) -> None:
    return None
