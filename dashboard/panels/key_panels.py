"""A chart for every scalar key a run logged, grouped into sections by the prefix before `/` (as W&B groups them).

For runs of users' own loops (the `jaxdash` client): their keys are theirs, not our tasks' names, so Live
draws each one (`train/step_loss` charted from its first point, not only shown as a number). Sections and the
keys in them keep the order the keys first appeared in; a new key gets its chart when the panel reruns for
its new tile (dashboard/panels/live_numbers.py). Our tasks' richer panels (panel_kinds) draw the keys they own.
"""

from __future__ import annotations

import streamlit as st

from dashboard.panels import panel_kinds, safe_text
from runstore import tags
from runstore.metrics.metric_table import MetricTable

OWNED = {"loss": (tags.TRAIN_LOSS, "test/loss"), "accuracy": (tags.TRAIN_ACC, "test/acc")}  # drawn by panel_kinds
OTHER = "Charts"  # the section of keys without a prefix


def sections(names: list[str]) -> dict[str, list[str]]:
    """{prefix: keys} in first-appearance order; a key without `/` goes to OTHER."""
    out: dict[str, list[str]] = {}
    for name in names:
        out.setdefault(name.split("/", 1)[0] if "/" in name else OTHER, []).append(name)
    return out


def draw(records: MetricTable, key: str, drawn_kinds: list[str], color: str | None, feed_run: str | None) -> int:
    """Every logged scalar no drawn panel shows, a section per prefix, two charts a row; returns how many."""
    owned = {t for kind in drawn_kinds for t in OWNED.get(kind, ())}
    names = [t for t in records.ordered_tags() if t not in owned and not t.startswith(f"{tags.SYS}/")]
    for prefix, group in sections(names).items():
        st.markdown(f"**{safe_text.md(prefix)}** · {len(group)}")
        cols = st.columns(2)
        for i, tag in enumerate(group):
            with cols[i % 2]:
                panel_kinds.key_panel(tag, records, f"{key}_{tag}", color, feed_run)
    return len(names)
