"""A panel for every scalar, histogram and text key a run logged, in sections by the prefix before `/` (as W&B).

For runs of users' own loops (the `jaxdash` client): their keys are theirs, not our tasks' names, so Live
draws each one (`train/step_loss` charted from its first point, not only shown as a number). Sections and the
keys in them keep the order the keys first appeared in; a new key gets its chart when the panel reruns for
its new tile (dashboard/panels/live_numbers.py). Our tasks' richer panels (panel_kinds) draw the keys they own.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from dashboard.panels import histogram_panel, image_steps_panel, panel_kinds, safe_text, text_panel
from dashboard.reading import provider
from dashboard.reading.provider import MAX_TAGS, MetricTable
from runstore import tags

OWNED = {"loss": (tags.TRAIN_LOSS, "test/loss"), "accuracy": (tags.TRAIN_ACC, "test/acc")}  # drawn by panel_kinds
OTHER = "Charts"  # the section of keys without a prefix
OPEN_MAX = 24  # a section of more keys starts collapsed (drawn when opened)


def sections(names: list[str]) -> dict[str, list[str]]:
    """{prefix: keys} in first-appearance order; a key without `/` goes to OTHER."""
    out: dict[str, list[str]] = {}
    for name in names:
        out.setdefault(name.split("/", 1)[0] if "/" in name else OTHER, []).append(name)
    return out


def dropped_note(records: MetricTable) -> None:
    """One line when the run logged more keys than the server keeps (MAX_TAGS): how many are not drawn, and where
    they are."""
    if records.dropped_keys:
        st.caption(
            f"This run logged more than {MAX_TAGS:,} metric keys: {records.dropped_keys:,} past the first "
            f"{MAX_TAGS:,} are not kept by the dashboard (they stay in the run's metrics.jsonl)."
        )


def logged_kinds(run_dir: Path | None, names: list[str]) -> dict[str, str]:
    """{key: kind}: the scalars `names`, then the run's histogram and text keys (images: media_panels)."""
    out = dict.fromkeys(names, "scalar")
    if run_dir is None:
        return out
    for kind, found in (("histogram", histogram_panel.histograms(run_dir)), ("text", provider.texts(run_dir))):
        for tag, items in found.items():
            if items:
                out.setdefault(tag, kind)
    return out


def draw(
    chart: panel_kinds.ChartRun,
    key: str,
    drawn_kinds: list[str],
    run_dir: Path | None = None,
) -> int:
    """Every logged key no drawn panel shows, a section per prefix, two panels a row; returns how many.

    Scalars are charts (fed: their new points appended between reruns); with `run_dir`, histograms and texts
    get their panels too (histogram_panel, text_panel), re-read when the panel reruns for the run's news
    (a changed media folder is news: dashboard/server/changes_route.py), never on a timer.
    """
    records = chart.records
    owned = {t for kind in drawn_kinds for t in OWNED.get(kind, ())}
    names = [t for t in records.ordered_tags() if t not in owned and not t.startswith(f"{tags.SYS}/")]
    dropped_note(records)
    kinds = logged_kinds(run_dir, names)
    for prefix, group in sections(list(kinds)).items():
        label = f"{safe_text.md(prefix)} · {len(group)}"
        if len(group) <= OPEN_MAX:
            st.markdown(f"**{label}**")
            _grid(run_dir, chart, {t: kinds[t] for t in group}, key)
            continue
        box = st.expander(label, expanded=False, key=image_steps_panel.widget_key(key, prefix), on_change="rerun")
        if box.open:  # a section of many keys draws when opened: a run of thousands of keys stays fast
            with box:
                _grid(run_dir, chart, {t: kinds[t] for t in group}, key)
    return len(kinds)


def _grid(run_dir: Path | None, chart: panel_kinds.ChartRun, shown: dict[str, str], key: str) -> None:
    cols = st.columns(2)
    for i, (tag, kind) in enumerate(shown.items()):
        with cols[i % 2]:
            _panel(run_dir, chart, tag, kind, image_steps_panel.widget_key(key, tag))


def _panel(run_dir: Path | None, chart: panel_kinds.ChartRun, tag: str, kind: str, key: str) -> None:
    if kind == "scalar" or run_dir is None:
        panel_kinds.key_panel(tag, chart, key)
    elif kind == "histogram":
        histogram_panel.tag_panel(tag, histogram_panel.histograms(run_dir)[tag], key)
    else:
        text_panel.tag_panel(tag, provider.texts(run_dir)[tag], key)
