"""A heartbeat as process 0 takes it: untrusted input, checked field by field before anything uses it.

Anyone who reaches the coordination service's port can write its key-value store, so a heartbeat
may be anything: another type, a huge string, thousands of metrics. `parse_beat` keeps what a
process of ours sends (`host_watch.own_record`) and refuses or cuts the rest, so no heartbeat can
make `jaxdash.init` raise on process 0, drop a row of its metrics, or grow status.json and
hosts.json: a record over MAX_BEAT_BYTES or of the wrong shape is ignored (as if not sent), a
message is cut to MAX_MESSAGE characters, a host name to MAX_HOST, and only finite numbers under
plain names (at most MAX_METRICS of them) become `sys/host<k>/<name>` columns.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

MAX_BEAT_BYTES = 64 << 10  # a real heartbeat is ~300 bytes
MAX_MESSAGE = 2000  # characters of a process's end message kept (status.json, hosts.json)
MAX_HOST = 255  # a host name's most characters (HOST_NAME_MAX)
MAX_METRICS = 32  # system metrics per heartbeat (ours send 2 or 3)
SENT_STATES = ("running", "finished", "stopped", "failed")  # what a process says of itself
METRIC_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}")


def cap_message(message: object) -> str | None:
    """A process's end message as kept: a string cut to MAX_MESSAGE characters (with a note), else None."""
    if not isinstance(message, str):
        return None
    if len(message) <= MAX_MESSAGE:
        return message
    return message[:MAX_MESSAGE] + f"... (cut: {len(message):,} characters)"


def _int(value: object) -> int | None:
    return value if type(value) is int else None


def _number(value: object) -> float | None:
    if type(value) not in (int, float):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def _metrics(value: object) -> dict[str, float]:
    """The finite numbers under plain names, at most MAX_METRICS; anything else dropped."""
    if not isinstance(value, dict):
        return {}
    out: dict[str, float] = {}
    for name, raw in value.items():
        number = _number(raw)
        if number is not None and isinstance(name, str) and METRIC_NAME.fullmatch(name):
            out[name] = number
            if len(out) == MAX_METRICS:
                break
    return out


def parse_beat(value: object, processes: int) -> dict[str, Any] | None:
    """The heartbeat record in `value` (the JSON text a process put), checked; None for one to ignore.

    Kept: process (an int in 1..processes-1), host (a string, cut), pid (an int or None), state (one
    of SENT_STATES), message (`cap_message`), sent and seq (numbers or None), sys (`_metrics`).
    """
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    if not isinstance(value, str) or len(value) > MAX_BEAT_BYTES:
        return None
    try:
        record = json.loads(value)
    except (ValueError, RecursionError):
        return None
    if not isinstance(record, dict):
        return None
    process = _int(record.get("process"))
    if process is None or not 0 < process < processes or record.get("state") not in SENT_STATES:
        return None
    host = record.get("host")
    return {
        "process": process,
        "host": host[:MAX_HOST] if isinstance(host, str) else None,
        "pid": _int(record.get("pid")),
        "state": record["state"],
        "message": cap_message(record.get("message")),
        "sent": _number(record.get("sent")),
        "seq": _int(record.get("seq")),
        "sys": _metrics(record.get("sys")),
    }
