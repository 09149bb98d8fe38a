"""The media section of Live and Run detail: every figure, image, table and extra scalar a run logged.

A plotly figure is an in-place chart (dashboard/panels/inplace_chart.py), so a live run's refresh redraws
only what changed; where a figure was logged at several steps a slider picks one, the newest by
default, and it keeps following the newest step until the user moves it. A task draws its own panel
this way with no change to dashboard/ (training.tasks.summaries.FigureSummary / ImageSummary).
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from dashboard.panels import image_steps_panel, safe_text
from dashboard.panels.inplace_chart import inplace_chart
from dashboard.reading import provider
from dashboard.reading.provider import MetricTable


def _step_choice(key: str, steps: tuple[int, ...]) -> int:
    """The step to show: a slider where there are several, following the newest unless the user moved it."""
    if len(steps) == 1:
        return steps[0]
    newest_key, slider_key = f"{key}_newest", f"{key}_step"
    chosen = st.session_state.get(slider_key)
    if chosen is None or chosen == st.session_state.get(newest_key) or chosen not in steps:
        st.session_state[slider_key] = steps[-1]  # follow the newest step as the run logs more
    st.session_state[newest_key] = steps[-1]
    return int(st.select_slider("Step", options=list(steps), key=slider_key))


def figure_panels(run_dir: Path, key: str) -> int:
    """Each logged figure at its chosen step; returns how many tags were drawn."""
    found = provider.figures(run_dir)
    for item in found:
        with st.container(border=True):
            st.markdown(f"**{safe_text.md(item.tag)}**")
            step = _step_choice(f"{key}_{item.tag}", item.steps)
            fig = provider.read_figure(item.paths[item.steps.index(step)])
            if fig is None:
                st.caption(f"step {step}: the file is not a plotly figure (being written or damaged); not shown.")
                continue
            st.caption(f"step {step:,}")
            inplace_chart(fig, key=f"{key}_fig_{item.tag}")
    return len(found)


def image_panels(run_dir: Path, key: str = "media", stepped_drawn: bool = False) -> int:
    """Each tag's images at a chosen step (image_steps_panel), else its latest image with when it was written;
    returns how many tags. stepped_drawn: the per-step ones are drawn elsewhere (data_panels); only the others."""
    if stepped_drawn:
        stepped = {provider.tag_file(t) for t in image_steps_panel.image_steps(Path(run_dir))}
    else:
        stepped = image_steps_panel.draw(run_dir, key)  # logged per step: a slider, captions
    found = [p for p in provider.images(run_dir) if p.stem not in stepped]
    cols = st.columns(min(3, len(found))) if found else []
    for i, path in enumerate(found):
        try:
            when = datetime.fromtimestamp(path.stat().st_mtime).strftime("%H:%M:%S")
            data = path.read_bytes()
        except OSError:
            continue  # replaced while listed: the next refresh shows the new one
        shown = image_steps_panel.sharp(data)
        if shown is None:
            cols[i % len(cols)].text(f"{path.name}: not an image (damaged?); not shown")
            continue
        caption = safe_text.md(f"{path.stem.replace('__', '/')} (written {when})")
        cols[i % len(cols)].image(shown[0], width=shown[1], output_format="PNG", caption=caption)
    return len(found) + len(stepped)


def table_panels(run_dir: Path) -> int:
    """Each tag's latest table with its step; returns how many."""
    found = provider.tables(run_dir)
    for tag, table in found:
        st.markdown(f"**{safe_text.md(tag)}** · step {table.step:,}")
        st.dataframe(pd.DataFrame(list(table.rows), columns=list(table.columns)), hide_index=True)
    return len(found)


def scalar_panels(records: MetricTable, key: str) -> int:
    """A chart for each scalar no loss / accuracy panel draws (a TensorBoard log's own tags); returns how many."""
    names = provider.other_scalars(records.tags())
    cols = st.columns(2) if names else []
    for i, tag in enumerate(names):
        x, y = records.series(tag)
        fig = go.Figure(go.Scatter(x=x, y=y, mode="lines", name=tag))
        fig.update_layout(title=tag, height=260, margin={"l": 40, "r": 10, "t": 40, "b": 30}, uirevision=key)
        fig.update_xaxes(title="step")
        with cols[i % 2]:
            inplace_chart(fig, key=f"{key}_scalar_{tag}")
    return len(names)


def media_section(run_dir: Path, records: MetricTable, key: str, per_key: bool = False) -> None:
    """Everything a run logged beyond the task's panels: figures, images, tables (nothing if none).

    A TensorBoard log's run also gets a chart per scalar tag: its names are its writer's, not ours,
    so the loss / accuracy panels would be empty. (Our runs' other scalars are the metric tiles.)
    per_key: scalars and per-step images have a panel per key elsewhere (data_panels); figures, tables and
    latest-only images here.
    """
    run_dir = Path(run_dir)
    scalars = (
        not per_key and provider.abilities(run_dir).charts_per_tag and bool(provider.other_scalars(records.tags()))
    )
    stepped = {provider.tag_file(t) for t in image_steps_panel.image_steps(run_dir)} if per_key else set()
    images = [p for p in provider.images(run_dir) if p.stem not in stepped]
    if not (scalars or provider.figures(run_dir) or images or provider.tables(run_dir)):
        return
    st.subheader("Media" if not scalars else "Logged scalars and media", divider="gray")
    if scalars:
        scalar_panels(records, key)
    figure_panels(run_dir, key)
    image_panels(run_dir, key, stepped_drawn=per_key)
    table_panels(run_dir)
