"""Run detail's Hosts panel: each process of a multi-host run (`jax.distributed`), its last heartbeat and state.

Drawn only for a run with a hosts.json (written by process 0 of the job, `runstore.hosts`); a
damaged one is a one-line warning. A static table: no table scripts for a fresh tab to load. st.table draws
its cells as markdown, and a machine name or failure message comes from a peer: each cell is escaped
(safe_text.md), shown as text.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from dashboard.panels import safe_text
from dashboard.reading import provider

STATE_LABELS = {"crashed": "crashed", "waiting": "no heartbeat yet", "unknown": "unknown (no one reports on it now)"}


def ago(seen: float | None, now: float) -> str:
    """A heartbeat's age in words ("3 s ago", "2 min ago", "never")."""
    if seen is None:
        return "never"
    age = max(0.0, now - seen)
    return f"{age:.0f} s ago" if age < 120 else f"{age / 60:.0f} min ago" if age < 7200 else f"{age / 3600:.0f} h ago"


def host_table(hosts: list[dict[str, Any]], now: float) -> pd.DataFrame:
    """One row per process: host index, machine, pid, state (and why), last heartbeat, CPU and memory."""
    rows = []
    for h in hosts:
        state = STATE_LABELS.get(h["state"], h["state"])
        sys_ = h["sys"]
        rows.append({
            "host": "" if h["process"] is None else str(h["process"]),
            "machine": h["host"],
            "pid": "" if h["pid"] is None else str(h["pid"]),
            "state": f"{state}: {h['message']}" if h["message"] and h["state"] in ("crashed", "failed") else state,
            "last heartbeat": ago(h["seen"], now),
            "CPU %": f"{sys_['cpu_percent']:.0f}" if "cpu_percent" in sys_ else "",
            "memory MB": f"{sys_['rss_mb']:.0f}" if "rss_mb" in sys_ else "",
        })  # fmt: skip
    return pd.DataFrame([{k: safe_text.md(v) for k, v in row.items()} for row in rows])


def section(run_dir: Path) -> None:
    """The Hosts table of a multi-host run (nothing for a run of one process)."""
    hosts, problem = provider.hosts(run_dir)
    if problem:
        st.warning(safe_text.md(problem))
    if not hosts:
        return
    st.markdown(f"**Hosts** ({len(hosts)} processes of one `jax.distributed` job; process 0 writes the run)")
    st.table(host_table(hosts, time.time()).set_index("host"))
