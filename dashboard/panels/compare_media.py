"""Compare the selected runs' histograms and images side by side: per key, one step slider over every run's
steps, then a column per run showing its own value at that step (or the newest before it), as W&B's media
panels put runs next to each other.

Keys come from the runs' media (histogram_panel.histograms, image_steps_panel.image_steps, both cached until a
file changes); a section per prefix, an expander drawn when opened past key_panels.OPEN_MAX keys. At most
MAX_RUNS runs side by side (the first selected); the rest are named.
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping
from typing import Any

import streamlit as st

from components import histogram_figures
from dashboard.panels import histogram_panel, image_steps_panel, key_panels, safe_text
from dashboard.panels.panels import chart
from dashboard.reading import provider

MAX_RUNS = 4  # columns side by side


def media_of(run: provider.RunInfo) -> dict[str, tuple[str, list[Any]]]:
    """{key: (kind, its steps' items oldest first)} of one run's histograms and per-step images."""
    out: dict[str, tuple[str, list[Any]]] = {}
    for kind, found in (
        ("histogram", histogram_panel.histograms(run.path)),
        ("image", image_steps_panel.image_steps(run.path)),
    ):
        for tag, items in found.items():
            if items:
                out.setdefault(tag, (kind, items))
    return out


def at_step(items: list[Any], step: int) -> Any | None:
    """The item of the newest step at or before `step` (histograms are (step, ...), images have .step)."""
    steps = [_step(i) for i in items]
    i = bisect.bisect_right(steps, step) - 1
    return items[i] if i >= 0 else None


def _step(item: Any) -> int:
    return int(item[0]) if isinstance(item, tuple) else int(item.step)


def draw(selected: list[provider.RunInfo], labels: Mapping[str, str], key: str = "compare_media") -> int:
    """Histograms and images of the selected runs, a key a row and a run a column; returns how many keys."""
    runs = selected[:MAX_RUNS]
    media = {r.run_id: media_of(r) for r in runs}
    keys: dict[str, str] = {}
    for found in media.values():
        for tag, (kind, _) in found.items():
            keys.setdefault(tag, kind)
    if not keys:
        return 0
    st.subheader("Histograms and images", divider="gray")
    if len(selected) > MAX_RUNS:
        rest = ", ".join(labels[r.run_id] for r in selected[MAX_RUNS:])
        st.caption(safe_text.md(f"The first {MAX_RUNS} selected runs side by side; not shown: {rest}."))
    for prefix, group in key_panels.sections(list(keys)).items():
        label = f"{safe_text.md(prefix)} · {len(group)}"
        if len(group) <= key_panels.OPEN_MAX:
            st.markdown(f"**{label}**")
            for tag in group:
                _row(tag, keys[tag], runs, media, labels, image_steps_panel.widget_key(key, tag))
            continue
        box = st.expander(
            label, expanded=False, key=image_steps_panel.widget_key(f"{key}_section", prefix), on_change="rerun"
        )
        if box.open:  # a section of many keys draws when opened
            with box:
                for tag in group:
                    _row(tag, keys[tag], runs, media, labels, image_steps_panel.widget_key(key, tag))
    return len(keys)


def _row(
    tag: str,
    kind: str,
    runs: list[provider.RunInfo],
    media: Mapping[str, Mapping[str, tuple[str, list[Any]]]],
    labels: Mapping[str, str],
    key: str,
) -> None:
    """One key: a step slider over every run's steps, then each run's value at that step in its column."""
    steps = sorted({_step(i) for r in runs for i in media[r.run_id].get(tag, (kind, []))[1]})
    with st.container(border=True):
        st.text(tag)
        step = steps[image_steps_panel.step_index(key, steps)]
        for col, run in zip(st.columns(len(runs)), runs, strict=True):
            with col:
                st.caption(safe_text.md(labels[run.run_id]))
                found_kind, items = media[run.run_id].get(tag, (kind, []))
                item = at_step(items, step) if found_kind == kind else None
                if item is None:
                    st.caption("not logged" if not items else f"nothing at step {step:,} or before")
                elif kind == "histogram":
                    fig = histogram_figures.step_bars(item, tag, uirevision=key)
                    chart(fig, image_steps_panel.widget_key(f"{key}_run", run.run_id))
                else:
                    st.caption(f"step {item.step:,}")
                    image_steps_panel.step_images(item, tag, columns=2)
