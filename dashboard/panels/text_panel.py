"""Text a run logged (`wandb.log({"phase": "warmup"})`, tensorboardX's `add_text`, a logdir's text summaries), shown
as TensorBoard's text plugin shows it: each key's texts rendered as markdown, newest step first, a step picker.

Read through the read interface (`provider.texts`: written by the client or mirrored from a logdir);
rendered by text_markdown (sanitized: no raw HTML, no image fetched, every link's address shown).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import streamlit as st

from dashboard.panels import text_markdown
from dashboard.panels.image_steps_panel import step_index, widget_key
from dashboard.reading import provider

MAX_ROWS = 1000  # the newest steps of a key offered (a string logged every step of a long run)
SHOWN = 5  # steps drawn at once: the picked one and those before it, newest first


def section(run_dir: Path, defs: Mapping[str, Mapping[str, Any]] | None = None, key: str = "text") -> int:
    """Every text key of the run under one heading (nothing when there is none); returns how many.

    defs: the run's define_metric definitions; a key defined hidden is not shown.
    """
    found = {
        tag: lines
        for tag, lines in provider.texts(Path(run_dir)).items()
        if lines and not provider.hidden(defs or {}, tag)
    }
    if not found:
        return 0
    st.subheader("Text", divider="gray")
    for tag, lines in found.items():
        tag_panel(tag, lines, widget_key(key, tag))
    return len(found)


def by_step(lines: list[tuple[int, str]]) -> dict[int, str]:
    """step -> text, steps ascending, the newest MAX_ROWS of them (a step logged twice keeps its last text)."""
    out: dict[int, str] = {}
    for step, text in lines:
        out.pop(step, None)
        out[step] = text
    return dict(sorted(out.items())[-MAX_ROWS:])


def steps_html(shown: list[tuple[int, str]]) -> str:
    """Each (step, text) as its step's label, then its text rendered (text_markdown), in the order given."""
    return "".join(
        f'<div class="jaxdash-text-step"><div style="opacity:0.6;font-size:0.85em">step {step:,}</div>'
        f"{text_markdown.to_safe_html(text)}</div>"
        for step, text in shown
    )


def tag_panel(tag: str, lines: list[tuple[int, str]], key: str = "text") -> None:
    """One text key as TensorBoard's text plugin shows it: markdown rendered safely, newest step first; a step
    picker (following the newest step until moved) chooses where the SHOWN steps start."""
    texts_by_step = by_step(lines)
    steps = list(texts_by_step)
    with st.container(border=True):
        total = len({s for s, _ in lines})
        st.text(tag if total <= MAX_ROWS else f"{tag} (the newest {MAX_ROWS} of {total} steps)")
        i = step_index(f"{key}_text", steps)
        shown = [(s, texts_by_step[s]) for s in reversed(steps[max(i - SHOWN + 1, 0) : i + 1])]
        if len(steps) > len(shown):
            st.caption(f"step {shown[0][0]:,} and the {len(shown) - 1} before it, newest first")
        st.html(steps_html(shown))
