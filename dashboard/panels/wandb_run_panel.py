"""Run detail's W&B fields: group, job type, entity, tags and notes of a client run, and its summary
(summary.json: numbers, strings, define_metric's {"min", "max"} as "min 0.4 · max 2").

A run's text is data: drawn with st.text and in tables, never as markdown.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from dashboard.panels import safe_text
from dashboard.reading import provider


def meta_lines(meta: provider.WandbMeta, notes: provider.RunNotes | None = None) -> list[str]:
    """The W&B fields worth a line ("W&B group: exp-a", ...); tags and notes only when the run's notes
    (notes.json, edited on Runs & compare and drawn above) do not already show them."""
    lines = []
    for label, value in (("W&B group", meta.group), ("Job type", meta.job_type), ("Entity", meta.entity)):
        if value:
            lines.append(f"{label}: {value}")
    if meta.tags and not (notes and notes.tags):
        lines.append("Tags: " + ", ".join(meta.tags))
    if meta.notes and not (notes and notes.notes):
        lines.append(f"Notes: {meta.notes}")
    return lines


def header(run_dir: Path) -> provider.WandbMeta:
    """The W&B fields under the run's name (nothing for a run without them); returns them."""
    meta = provider.wandb_meta(run_dir)
    lines = meta_lines(meta, provider.notes(run_dir))
    if lines:
        st.text("\n".join(lines))
    return meta


def group_ids(group: str, runs: Sequence[provider.RunInfo]) -> list[str]:
    """The ids of the runs of one W&B group (config.json "wandb_group", read once per change of a run's file)."""
    return [r.run_id for r in runs if not r.damaged and provider.wandb_meta(r.path).group == group]


def group_compare(run_id: str, group: str, runs: Sequence[provider.RunInfo]) -> None:
    """A button that compares the run's W&B group on Runs & compare (each run its own line), when it has others."""
    ids = group_ids(group, runs)
    if len(ids) > 1 and st.button(
        f"Compare its W&B group ({len(ids)} runs)", icon=":material/compare_arrows:", key="detail_wandb_group"
    ):
        st.switch_page("views/runs.py", query_params={"compare": ",".join(ids)})


def summary_table(summary: Mapping[str, Any]) -> pd.DataFrame:
    """One row per summary key: the key and its value as text (W&B's {op: value} dicts spelled out)."""
    keys = [k for k in summary if not k.startswith("_")]
    return pd.DataFrame({"key": keys, "value": [provider.summary_text(summary[k]) for k in keys]})


def summary_section(run_dir: Path) -> int:
    """The run's W&B summary as a table (nothing when it wrote no summary.json); returns how many keys."""
    found, problem = provider.summary(run_dir)
    if problem:
        st.warning(safe_text.md(problem), icon=":material/broken_image:")
    table = summary_table(found)
    if table.empty:
        return 0
    st.subheader("Summary", divider="gray")
    st.caption("The run's summary as W&B keeps it: each metric's last value, or the min / max define_metric asks for.")
    st.dataframe(table, hide_index=True, column_config={"value": st.column_config.TextColumn(width="large")})
    return len(table)
