"""Run detail's alerts (`wandb.alert`, alerts.jsonl) and the run's events (status.json "events", e.g. a
write gap on a full disk): level, title, text, step and time, as tables of plain text."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from dashboard.reading import provider

LEVEL_ORDER = {"ERROR": 0, "WARN": 1, "INFO": 2}


def _when(ts: Any) -> datetime | None:
    try:
        return datetime.fromtimestamp(float(ts))
    except (TypeError, ValueError, OverflowError, OSError):
        return None


def alerts_table(found: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """One row per alert, oldest first: level, title, text, step, time."""
    return pd.DataFrame(
        {
            "level": [str(a.get("level") or "") for a in found],
            "title": [str(a.get("title") or "") for a in found],
            "text": [str(a.get("text") or "") for a in found],
            "step": [a.get("step") if isinstance(a.get("step"), int) else None for a in found],
            "time": [_when(a.get("ts")) for a in found],
        }
    )


def events_table(found: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """One row per run event: time, kind, message."""
    return pd.DataFrame(
        {
            "time": [_when(e.get("time")) for e in found],
            "kind": [str(e.get("kind")).replace("_", " ") for e in found],
            "message": [str(e.get("message") or "") for e in found],
        }
    )


TIME = st.column_config.DatetimeColumn("time", format="YYYY-MM-DD HH:mm:ss")


def alerts_section(run_dir: Path) -> int:
    """The run's alerts, the most severe level named above the table (nothing when there are none)."""
    found = provider.alerts(run_dir)
    if not found:
        return 0
    worst = min((str(a.get("level") or "INFO").upper() for a in found), key=lambda lv: LEVEL_ORDER.get(lv, 3))
    text = f"{len(found)} alert{'s' if len(found) != 1 else ''} raised by the run (wandb.alert)."
    (st.error if worst == "ERROR" else st.warning if worst == "WARN" else st.info)(
        text, icon=":material/notifications:"
    )
    st.dataframe(
        alerts_table(found),
        hide_index=True,
        column_config={"time": TIME, "text": st.column_config.TextColumn(width="large")},
    )
    return len(found)


def events_section(status: Mapping[str, Any]) -> int:
    """The run's events (status.json), a write gap named above them (nothing when there are none)."""
    found = provider.events(status)
    if not found:
        return 0
    gaps = sum(e["kind"] == "write_gap" for e in found)
    if gaps:
        st.warning(
            f"The run store could not be written {gaps} time(s) (e.g. a full disk): rows of those gaps may be "
            "missing from the charts. See the run's events.",
            icon=":material/sd_card_alert:",
        )
    with st.expander(f"Run events ({len(found)})", icon=":material/event_note:"):
        st.dataframe(events_table(found), hide_index=True, column_config={"time": TIME})
    return len(found)
