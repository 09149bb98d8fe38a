"""hosts.json (`RunFolder.hosts_path`): the hosts of a multi-host run (`jax.distributed`), their heartbeats, states and system metrics.

Written only by process 0 of the job (`jaxdash.multihost`), atomically, every heartbeat (2 s by
default); the other processes send their heartbeats to it over JAX's coordination service, so this
file, like the whole run folder, lives on process 0's disk. A run of one process has no hosts.json.

    {"processes": 2, "updated": <unix time>, "hosts": [
      {"process": 1, "host": "node-b", "pid": 4321, "state": "running" | "finished" | "stopped" | "failed"
       | "crashed" | "waiting", "message": str | null, "seen": <unix time process 0 last heard from it>,
       "sys": {"cpu_percent": 97.0, "rss_mb": 812.5}}, ...]}

"waiting": the process has sent no heartbeat yet (or never will: a script that calls `jaxdash.init`
on process 0 only). A reader may assume one entry per process, sorted by process index.
No JAX here: the dashboard imports this module.
"""

from __future__ import annotations

import math
import socket
import time
from pathlib import Path
from typing import Any

from runstore.atomic import atomic_write_json
from runstore.processes import pid_alive
from runstore.run_checks import DamagedRunFile, load_json_object, number_or_none

HOST_STATES = ("waiting", "running", "finished", "stopped", "failed", "crashed")
STALE_S = 60.0  # process 0 rewrites hosts.json every heartbeat (2 s): this long without, it no longer reports
MAX_HOSTS = 16_384  # processes of one job shown (a TPU pod's largest slices have a few thousand hosts)


def write_hosts(path: Path, processes: int, hosts: list[dict[str, Any]]) -> None:
    """Replace the hosts file at `path` (`RunFolder.hosts_path`; process 0 of the job only)."""
    doc = {"processes": processes, "updated": time.time(), "hosts": sorted(hosts, key=lambda h: h["process"])}
    atomic_write_json(Path(path), doc)


def read_hosts(path: Path, now: float | None = None) -> tuple[list[dict[str, Any]], str | None]:
    """(the job's hosts as the page shows them, a one-line problem with hosts.json or None).

    Each host's "state" is as recorded, except: a "running" process gone from this machine is
    "crashed"; process 0 "running" in a hosts.json not rewritten for STALE_S is "unknown" (it no
    longer reports, from a machine whose processes a reader cannot see); and while process 0 is not
    running, nothing reports on the others, so one still "running" or "waiting" is "unknown".
    No hosts.json: ([], None). `path`: `RunFolder.hosts_path` (callers use `RunFolder.hosts`).
    """
    path = Path(path)
    try:
        doc = load_json_object(path)
    except DamagedRunFile as exc:
        return [], f"{exc}; the hosts of this run are not shown."
    if doc is None:
        return [], None
    found = doc.get("hosts")
    if not isinstance(found, list) or not all(isinstance(h, dict) for h in found):
        return [], f"{path.name}: 'hosts' is not a list of objects; the hosts of this run are not shown."
    if len(found) > MAX_HOSTS:  # hosts.json is within runstore/small_json.py's bounds, but each host shown costs ~1 KB
        return (
            [],
            f"{path.name}: {len(found):,} hosts, over the limit of {MAX_HOSTS:,}; the hosts of this run are not shown.",
        )
    shown = [_shown(h) for h in found]
    updated = number_or_none(doc.get("updated"))
    stale = updated is None or (time.time() if now is None else now) - updated > STALE_S
    lead = next((h for h in shown if h["process"] == 0), None)
    if lead is not None and lead["state"] == "running" and stale:
        lead["state"] = "unknown"
    if lead is None or lead["state"] != "running":
        for h in shown:
            if h["process"] != 0 and h["state"] in ("running", "waiting"):
                h["state"] = "unknown"
    return shown, None


def _shown(host: dict[str, Any]) -> dict[str, Any]:
    """One host's fields, checked (bad values become None); a running process gone from this machine is crashed."""
    pid = host.get("pid") if isinstance(host.get("pid"), int) and not isinstance(host.get("pid"), bool) else None
    state = host.get("state") if host.get("state") in HOST_STATES else None
    sys_ = host.get("sys") if isinstance(host.get("sys"), dict) else {}
    out = {
        "process": host.get("process") if isinstance(host.get("process"), int) else None,
        "host": str(host.get("host") or ""),
        "pid": pid,
        "message": host.get("message") if isinstance(host.get("message"), str) else None,
        "seen": number_or_none(host.get("seen")),
        "sys": {str(k): float(v) for k, v in sys_.items() if _finite(v)},
    }
    if state == "running" and out["host"] == socket.gethostname() and pid and not pid_alive(pid):
        state = "crashed"
    out["state"] = state or "unknown"
    return out


def _finite(v: Any) -> bool:
    n = number_or_none(v)
    return n is not None and math.isfinite(n)


def lost_message(host: dict[str, Any], processes: int, why: str) -> str:
    """The run's message when a host of the job is lost, naming it, e.g. "Host 1 (process 1 of 2, pid 4321
    on node-b) died: its process is gone (killed or crashed)."."""
    where = f"pid {host.get('pid')} on {host.get('host') or 'an unknown machine'}"
    return f"Host {host.get('process')} (process {host.get('process')} of {processes}, {where}) died: {why}."
