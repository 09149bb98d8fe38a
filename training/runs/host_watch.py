"""Heartbeats and system metrics of a multi-host run's processes (`jaxdash.multihost`, `training.runs.job_watch`).

Every process samples its own CPU and memory (as the engine's `sys/*`) once a
heartbeat (BEAT_S, $JAXDASH_HEARTBEAT_S). The other processes put theirs into JAX's coordination
service (the key-value store `jax.distributed` runs in process 0, the one Orbax's multi-process
checkpoints use), so no shared filesystem is needed for them. Process 0's `Hub` reads them, writes
the run's hosts.json (`runstore.hosts`), hands the samples to the run's rows as
`sys/host<k>/<metric>` (`HostColumns`), and records the run crashed, naming the host, when one
dies: its process gone from this machine, or no heartbeat for LOST_S ($JAXDASH_HOST_TIMEOUT_S).
A heartbeat is untrusted input (anyone reaching the service's port can write one): `beat_check` checks it.
A process that never sends one (a script calling `jaxdash.init` on process 0 only) is "waiting", never lost.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from runstore import hosts
from runstore.env_numbers import env_number_or_default
from runstore.processes import pid_alive
from runstore.run_folder import RunFolder
from runwriters.base import MultiWriter, Progress
from training.runs.beat_check import cap_message, parse_beat

logger = logging.getLogger("jaxdash")
BEAT_S = 2.0  # a heartbeat (and a system-metrics sample) per process this often
END_WAIT_S = 10.0  # at the end, process 0 waits this long at most for the others' last heartbeats
LOST_S = 30.0  # no heartbeat for this long: the host is lost (JAX's own heartbeat timeout is 100 s)


def beat_s() -> float:
    """Seconds between heartbeats ($JAXDASH_HEARTBEAT_S, default BEAT_S)."""
    return env_number_or_default("JAXDASH_HEARTBEAT_S", BEAT_S, positive=True)


def lost_s() -> float:
    """Seconds without a heartbeat after which a host is lost ($JAXDASH_HOST_TIMEOUT_S, default LOST_S)."""
    return env_number_or_default("JAXDASH_HOST_TIMEOUT_S", LOST_S, positive=True)


class Sampler:
    """This process's system metrics as the engine names them less "sys/": cpu_percent (since the previous
    sample), rss_mb, and accel_mem_mb where JAX reports device memory (GPU, TPU)."""

    def __init__(self) -> None:
        import psutil

        self._process = psutil.Process()
        self._process.cpu_percent(None)  # starts psutil's CPU-time window
        self._device: Any = None
        self._looked = False

    def sample(self) -> dict[str, float]:
        """One sample; never starts JAX's backend (the script's settings come first), only reads it once started."""
        out = {"cpu_percent": float(self._process.cpu_percent(None)), "rss_mb": self._process.memory_info().rss / 2**20}
        device = self._accelerator()
        if device is not None:
            out["accel_mem_mb"] = (device.memory_stats() or {}).get("bytes_in_use", 0) / 2**20
        return out

    def _accelerator(self) -> Any:
        if not self._looked:
            try:
                from jax._src import xla_bridge

                if xla_bridge.backends_are_initialized():
                    self._looked = True
                    import jax

                    device = jax.local_devices()[0]
                    self._device = device if device.memory_stats() else None  # the CPU backend reports none
            except Exception:  # noqa: BLE001 - no device memory on this backend or JAX version
                self._looked, self._device = True, None
        return self._device


def own_record(process: int, sampler: Sampler, state: str = "running", message: str | None = None) -> dict[str, Any]:
    """This process's heartbeat: who it is, its state and a fresh system-metrics sample."""
    return {"process": process, "host": socket.gethostname(), "pid": os.getpid(), "state": state,
            "message": cap_message(message), "sent": time.time(), "sys": sampler.sample()}  # fmt: skip


class Beats:
    """A non-zero process's heartbeat: its record put into the coordination service every `beat_s()`."""

    def __init__(self, kv: Any, process: int) -> None:
        self._kv, self._process, self._sampler = kv, process, Sampler()
        self._seq, self._done = 0, threading.Event()
        self._send("running", None)  # the first one before init returns: process 0 hears of us at once
        self._thread = threading.Thread(target=self._loop, name="jaxdash-heartbeat", daemon=True)
        self._thread.start()

    def _send(self, state: str, message: str | None) -> None:
        self._seq += 1
        record = {**own_record(self._process, self._sampler, state, message), "seq": self._seq}
        try:
            self._kv.set(f"beat/{self._process}", json.dumps(record))
        except Exception as exc:  # noqa: BLE001 - process 0 (and its service) gone: JAX ends this process soon
            logger.debug("jaxdash: heartbeat not sent (%s)", exc)

    def _loop(self) -> None:
        while not self._done.wait(beat_s()):
            self._send("running", None)

    def stop(self, state: str, message: str | None) -> None:
        """The last heartbeat, with how this process ended."""
        self._done.set()
        self._thread.join(timeout=5)
        self._send(state, message)


class Hub:
    """Process 0's view of every process: polls heartbeats, writes hosts.json, notices a lost host."""

    def __init__(self, run_dir: Path, kv: Any, processes: int) -> None:
        self.run_dir, self._kv, self.processes = Path(run_dir), kv, processes
        self._sampler, self._lock, self._done = Sampler(), threading.Lock(), threading.Event()
        self._hosts: dict[int, dict[str, Any]] = {k: {"process": k, "state": "waiting"} for k in range(processes)}
        self._heard: dict[int, tuple[int, float]] = {}  # process -> (its last seq, monotonic time it arrived)
        self._columns: dict[str, float] = {}  # samples not yet in a row
        self._lost: list[str] = []  # the messages of hosts that died, first first
        self._failed: list[str] = []
        self._gone: set[int] = set()  # hosts whose process was gone at the last poll, with no end heard yet
        self._since = time.monotonic()
        self.solo = False  # no other process ever reported: a script calling init on process 0 only
        self._thread = threading.Thread(target=self._loop, name="jaxdash-hosts", daemon=True)

    def start(self) -> None:
        """Poll now and every `beat_s()` from now on; a failed poll is a warning, never an error of `init`."""
        try:
            self.poll()
        except Exception as exc:  # noqa: BLE001 - watching never stops the run
            logger.warning("jaxdash: the hosts of run %s could not be checked (%s)", self.run_dir.name, exc)
        self._thread.start()

    def _loop(self) -> None:
        while not self._done.wait(beat_s()):
            try:
                self.poll()
            except Exception as exc:  # noqa: BLE001 - watching never stops the run; logged once a beat at most
                logger.warning("jaxdash: the hosts of run %s could not be checked (%s)", self.run_dir.name, exc)

    def poll(self, own_state: str = "running", message: str | None = None) -> None:
        """Sample this process, read the others' heartbeats, judge who is lost, write hosts.json."""
        now, mono = time.time(), time.monotonic()
        own = {**own_record(0, self._sampler, own_state, message), "seen": now}
        records = [own]
        for key, value in self._kv.dir_get("beat/"):
            record = parse_beat(value, self.processes)  # untrusted: anyone reaching the service's port writes it
            if record is None or str(key).rsplit("/", 1)[-1] != str(record["process"]):
                continue
            k = record["process"]
            if record["seq"] != self._heard.get(k, (None,))[0]:
                self._heard[k] = (record["seq"], mono)
                records.append({**record, "seen": now})
        with self._lock:
            for record in records:
                self._take(record)
            newly_lost = self._judge(mono)
            snapshot = [dict(h) for h in self._hosts.values()]
        RunFolder(self.run_dir).write_hosts(self.processes, snapshot)
        for host, text in newly_lost:
            RunFolder(self.run_dir).write_status(state="crashed", message=text, lost_host=host)
            RunFolder(self.run_dir).add_event("host_lost", text, host=host)

    def _take(self, record: dict[str, Any]) -> None:
        k = int(record["process"])
        if self._hosts[k].get("state") == "crashed":
            return  # lost stays lost (JAX ends the job anyway)
        if record.get("state") == "failed" and self._hosts[k].get("state") != "failed":
            self._failed.append(f"Host {k} ({record.get('host')}) failed: {record.get('message') or 'non-zero exit'}")
        self._hosts[k] = {key: record.get(key) for key in ("process", "host", "pid", "state", "message", "seen", "sys")}
        for name, value in (record.get("sys") or {}).items():
            self._columns[f"sys/host{k}/{name}"] = value

    def _judge(self, mono: float) -> list[tuple[int, str]]:
        """Hosts lost since the last poll: (process, the run's message). Called under the lock."""
        out = []
        for k, host in self._hosts.items():
            if k == 0 or host.get("state") != "running":
                continue
            why = None
            gone = host.get("host") == socket.gethostname() and not pid_alive(host.get("pid"))
            if gone and k not in self._gone:
                self._gone.add(k)  # its last heartbeat (its end) may have landed after this poll's read: ask again
            elif gone:
                why = "its process is gone (killed or crashed)"
            elif mono - self._heard[k][1] > lost_s():
                why = f"no heartbeat for {lost_s():g} s"
            if why:
                text = hosts.lost_message(host, self.processes, why)
                host.update(state="crashed", message=why)
                self._lost.append(text)
                out.append((k, text))
        if not self._heard and mono - self._since > lost_s():
            self.solo = True
        return out

    def take_columns(self) -> dict[str, float]:
        """The samples that arrived since the last call, as {"sys/host<k>/<metric>": value}."""
        with self._lock:
            out, self._columns = self._columns, {}
        return out

    def verdict(self) -> tuple[str, str] | None:
        """("crashed", message) once a host was lost, else ("failed", message) once one failed, else None."""
        with self._lock:
            if self._lost:
                return "crashed", self._lost[0]
            return ("failed", self._failed[0]) if self._failed else None

    def stop(self) -> None:
        """Stop polling, then poll until every other process sent its end or is gone (up to END_WAIT_S, or two
        heartbeats if longer), so what they sent last is in the run. A process that ends later stays "running"
        in hosts.json. (Two heartbeats alone, 0.4 s at a 0.2 s beat, lost a loaded peer's end: read as crashed.)"""
        self._done.set()
        if self._thread.is_alive():
            self._thread.join(timeout=10)
        deadline = time.monotonic() + max(2 * beat_s(), END_WAIT_S)
        while True:
            try:
                self.poll()
            except Exception as exc:  # noqa: BLE001 - the run still ends
                logger.warning("jaxdash: the hosts of run %s could not be checked (%s)", self.run_dir.name, exc)
                return
            with self._lock:
                running = any(h.get("state") == "running" for k, h in self._hosts.items() if k > 0)
            if not running or time.monotonic() > deadline:
                return
            time.sleep(0.05)

    def close(self, state: str, message: str | None) -> None:
        """hosts.json with this process's own end."""
        try:
            self.poll(state, message)
        except Exception as exc:  # noqa: BLE001
            logger.warning("jaxdash: hosts.json of run %s not written (%s)", self.run_dir.name, exc)


class HostColumns(MultiWriter):
    """The run's writers, with the hosts' newest samples added to the last row of each block of rows."""

    def __init__(self, writers: list[Any], hub: Hub) -> None:
        super().__init__(writers)
        self._hub = hub

    def write_scalar_rows(self, steps: np.ndarray, columns: Mapping[str, np.ndarray],
                          progress: Progress | None = None) -> None:  # fmt: skip
        """As MultiWriter's; a block is split before its last row when samples wait, so each step stays one row."""
        extra = self._hub.take_columns() if len(steps) else {}
        if not extra:
            super().write_scalar_rows(steps, columns, progress)
            return
        if len(steps) > 1:
            super().write_scalar_rows(steps[:-1], {k: np.asarray(v)[:-1] for k, v in columns.items()}, None)
        last = {k: np.asarray(v)[-1:] for k, v in columns.items()}
        last.update({k: np.asarray([v], dtype=np.float64) for k, v in extra.items() if k not in last})
        super().write_scalar_rows(np.asarray(steps)[-1:], last, progress)
