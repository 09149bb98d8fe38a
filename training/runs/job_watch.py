"""The hosts of a built-in engine job (`jax.distributed`): heartbeats in, a lost host named, no endless wait.

As for a client script's job (`jaxdash.multihost`): every process k > 0 sends a heartbeat with its
CPU and memory through JAX's coordination service (`training.runs.host_watch.Beats`), and process 0's
`Hub` keeps hosts.json in the run folder and makes the run crashed, naming the host, once one's
process is gone from this machine or silent for $JAXDASH_HOST_TIMEOUT_S.

The engine then cannot go on: its next collective waits for the lost process, and gloo and JAX's
coordination service give up only after minutes (or abort the process without a word), and even a
run that ended waits at exit in `jax.distributed.shutdown` for every process. So once a host is
lost, process 0 gets GRACE_S to record the end itself (an error from a collective ends the run
through the usual path, crashed naming the host); then it records the end of every member if the
run did not, says why on stderr and exits.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from runstore.env_numbers import env_number_or_default
from runstore.run_folder import RunFolder

log = logging.getLogger(__name__)

PREFIX = "jaxdash-engine/"  # the engine's heartbeat keys; a client script's runs use "jaxdash/<n>/"
GRACE_S = 10.0  # after a host is lost (or failed), process 0 exits this much later ($JAXDASH_LOST_HOST_GRACE_S)
EXIT_CODE = 1  # the CLI's code for a crashed run


class JobWatch:
    """Process 0: a Hub over the run and a watchdog; process k > 0: its heartbeat. Nothing outside a job."""

    def __init__(self, run_dirs: Sequence[Path]) -> None:
        self.run_dirs = [Path(d) for d in run_dirs]
        self._hub: Any = None
        self._beats: Any = None
        self._closed = threading.Event()
        kv, index, count = _coordination()
        if kv is None:
            return
        from training.runs.host_watch import Beats, Hub

        try:
            if index == 0:
                self._hub = Hub(self.run_dirs[0], kv, count)
                self._hub.start()
                threading.Thread(target=self._watchdog, name="jaxdash-job-watchdog", daemon=True).start()
            else:
                self._beats = Beats(kv, index)
        except Exception as exc:  # noqa: BLE001 - watching never stops the run
            log.warning("the hosts of run %s are not watched (%s)", self.run_dirs[0].name, exc)

    def verdict(self) -> tuple[str, str] | None:
        """("crashed" | "failed", message naming the host) once a host of the job was lost or failed (process 0
        only), else None."""
        if self._hub is None:
            return None
        try:
            self._hub.poll()  # now, not at the next heartbeat: the run is ending
        except Exception:  # noqa: BLE001, S110 - the coordinator failing too: judge on what was heard
            pass
        return self._hub.verdict()

    def end(self, state: str, message: str | None) -> None:
        """This process's end: process 0 waits for the others' last heartbeats and writes hosts.json."""
        if self._beats is not None:
            self._beats.stop(state, message)
        if self._hub is not None:
            self._hub.stop()
            self._hub.close(state, message)

    def close(self) -> None:
        """The run's end is recorded (its status.json says why it ended)."""
        self._closed.set()

    def _watchdog(self) -> None:
        """Process 0: once a host is lost, give the run GRACE_S to end on its own, then end the process.

        Even a run that ended would wait at exit: `jax.distributed.shutdown` waits for every process.
        """
        from training.runs.host_watch import beat_s

        while True:
            time.sleep(beat_s())
            found = self._hub.verdict()
            if found is not None:
                self._closed.wait(_grace_s())
                self._abandon(*found)

    def _abandon(self, state: str, message: str) -> None:
        """Record every member's end (`state`, `message`) unless the run did, say why, and exit."""
        if not self._closed.is_set():  # the main thread waits in a collective for the lost host
            for d in self.run_dirs:
                try:
                    RunFolder(d).write_status(state=state, message=message, ended=time.time())
                except OSError:
                    pass
            print(f"error: {self.run_dirs[0].name}: {message}", file=sys.stderr)
        print(
            f"Process 0 stops waiting for that host and exits; resume the run in every process of a new job: "
            f"python -m training resume {self.run_dirs[0]} --coordinator ... --num-processes ... --process-id ...",
            file=sys.stderr,
        )
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(EXIT_CODE)


def _grace_s() -> float:
    """Seconds process 0 gives a job that lost a host to end on its own: GRACE_S, or $JAXDASH_LOST_HOST_GRACE_S."""
    return env_number_or_default("JAXDASH_LOST_HOST_GRACE_S", GRACE_S, minimum=0)


def _coordination() -> tuple[Any, int, int]:
    """(the engine's key-value store in JAX's coordination service, process index, count), or (None, 0, 1)."""
    jax = sys.modules.get("jax")
    if jax is None or not jax.distributed.is_initialized():
        return None, 0, 1
    from jax._src import distributed  # the service's client, as jaxdash.multihost and Orbax use it

    state = distributed.global_state
    if state.client is None or int(state.num_processes) < 2:
        return None, 0, 1
    from training.runs.coordination import Coordination

    return Coordination(state.client, PREFIX), int(state.process_id), int(state.num_processes)
