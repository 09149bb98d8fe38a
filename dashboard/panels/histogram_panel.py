"""Histograms a run logged (`wandb.Histogram`, arrays): one step's bars with a step slider, beside the steps
offset one behind the other or their percentile bands (TensorBoard's Histograms and Distributions tabs).

Read through the read interface (`provider.histograms`), re-read only when a file changed;
figures from components/histogram_figures.py.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import streamlit as st

from components import histogram_figures
from dashboard.panels.image_steps_panel import step_index, widget_key
from dashboard.panels.panels import chart
from dashboard.reading import provider

VIEWS = ("Histograms", "Distribution")


@functools.lru_cache(maxsize=32)
def _read(run_dir: str, signature: tuple) -> dict[str, list[histogram_figures.Hist]]:
    found = provider.histograms(Path(run_dir))
    valid = {tag: [h for h in hists if histogram_figures.valid(h)] for tag, hists in found.items()}
    return {tag: hists for tag, hists in valid.items() if hists}  # a tag of empty histograms only: no panel


def histograms(run_dir: Path) -> dict[str, list[histogram_figures.Hist]]:
    """Every histogram tag's valid (step, counts, edges), oldest first; cached until a file changes."""
    signature = provider.histograms_stamp(run_dir)
    return _read(str(run_dir), signature) if signature else {}


def tag_panel(tag: str, hists: list[histogram_figures.Hist], key: str) -> None:
    """One histogram key: the chosen step's bars (left), the steps over time (right)."""
    k = widget_key(key, tag)
    with st.container(border=True):
        st.text(tag)
        left, right = st.columns(2)
        with left:
            i = step_index(k, [h[0] for h in hists])
            chart(histogram_figures.step_bars(hists[i], tag, uirevision=k), f"{k}_bars")
        with right:
            view = st.segmented_control("View", VIEWS, default=VIEWS[0], key=f"{k}_view") or VIEWS[0]
            build = histogram_figures.offsets if view == VIEWS[0] else histogram_figures.distribution
            chart(build(hists, tag, uirevision=k), f"{k}_over")


def section(run_dir: Path, key: str, defs: Mapping[str, Mapping[str, Any]] | None = None) -> int:
    """Every histogram key of the run under one heading (nothing when there is none); returns how many.

    defs: the run's define_metric definitions; a key defined hidden is not drawn.
    """
    shown = histograms(run_dir).items()
    found = {t: h for t, h in shown if h and not provider.hidden(defs or {}, t)}
    if not found:
        return 0
    st.subheader("Histograms", divider="gray")
    for tag, hists in found.items():
        tag_panel(tag, hists, key)
    return len(found)
