"""A panel for every key a run logged, of every kind (scalar, histogram, image, text), as W&B draws them.

Keys are grouped into sections by the prefix before `/` (key_panels.sections), in the order they first
appeared; each key is drawn by its kind's own panel (panel_kinds.key_panel, histogram_panel.tag_panel,
image_steps_panel.tag_panel, text_panel.tag_panel). A filter box narrows the keys by name; a "Pinned"
section on top holds the keys a user pins (the pin button on each panel); sections collapse. Pins and
collapsed sections are kept per project in the runs root (runstore.layout_prefs). A section draws its
panels only while open, so a run of thousands of keys draws only what is looked at; a section of more
than OPEN_MAX keys starts closed.
"""

from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path

import streamlit as st

from components.colors import run_color
from dashboard.panels import histogram_panel, image_steps_panel, key_panels, panel_kinds, safe_text, text_panel
from dashboard.reading import provider
from dashboard.reading.provider import MetricTable
from runstore import layout_prefs, tags

OPEN_MAX = key_panels.OPEN_MAX  # a section of more keys starts collapsed (drawn when opened)
PINNED = "Pinned"


def project_of(run_dir: Path) -> str:
    """The project whose layout a run's page uses: the client's `project`, else the task, else "default"."""
    doc = provider.config_doc(run_dir)
    for field in ("project", "task"):
        if isinstance(doc.get(field), str) and doc[field]:
            return doc[field]
    return "default"


def logged_keys(run_dir: Path, records: MetricTable, owned: set[str] = frozenset()) -> dict[str, str]:
    """{key: kind} of every key the run logged, scalars first in first-appearance order, then images,
    histograms and texts (each in its files' order: their first step is not compared across kinds)."""
    out = {t: "scalar" for t in records.ordered_tags() if t not in owned and not t.startswith(f"{tags.SYS}/")}
    for kind, found in (
        ("image", image_steps_panel.image_steps(run_dir)),
        ("histogram", histogram_panel.histograms(run_dir)),
        ("text", provider.texts(run_dir)),
    ):
        for tag, items in found.items():
            if items:
                out.setdefault(tag, kind)
    return out


def matching(keys: dict[str, str], query: str) -> dict[str, str]:
    """The keys whose name holds every word of `query` (case-insensitive); all of them for an empty query."""
    words = query.lower().split()
    return {k: v for k, v in keys.items() if all(w in k.lower() for w in words)}


def widget_key(key: str, name: str) -> str:
    """A widget key for a section or key name: a digest, whatever characters the name holds."""
    return f"{key}_{hashlib.sha1(name.encode()).hexdigest()[:12]}"


def _panel(run_dir: Path, records: MetricTable, tag: str, kind: str, key: str, color: str | None) -> None:
    k = widget_key(key, tag)
    if kind == "scalar":
        panel_kinds.key_panel(tag, panel_kinds.ChartRun(records, run_dir.name, color), k)
    elif kind == "histogram":
        histogram_panel.tag_panel(tag, histogram_panel.histograms(run_dir)[tag], k)
    elif kind == "image":
        image_steps_panel.tag_panel(tag, image_steps_panel.image_steps(run_dir)[tag], k)
    else:
        text_panel.tag_panel(tag, provider.texts(run_dir)[tag], k)


def _grid(run_dir: Path, records: MetricTable, shown: dict[str, str], key: str, color: str | None, pins: _Pins) -> None:
    items = list(shown.items())
    for i in range(0, len(items), 2):  # a row of two at a time: panels read (and are laid out) in key order
        for col, (tag, kind) in zip(st.columns(2), items[i : i + 2], strict=False):
            with col:
                pins.button(tag)
                _panel(run_dir, records, tag, kind, key, color)


@dataclasses.dataclass(frozen=True)
class _Pins:
    """The pin button on each panel: a click pins its key on top (or unpins it) in the project's layout."""

    root: Path
    project: str
    pinned: tuple[str, ...]
    key: str

    def button(self, tag: str) -> None:
        here = tag in self.pinned
        st.button(
            "Unpin" if here else "Pin",
            icon=":material/keep_off:" if here else ":material/keep:",
            key=widget_key(f"{self.key}_pin_button", tag),
            type="tertiary",
            help="Take this panel out of Pinned" if here else "Pin this panel on top (kept for the project)",
            on_click=_toggle_pin,
            args=(self.root, self.project, tag),
        )


def _toggle_pin(root: Path, project: str, tag: str) -> None:
    """Callback of a pin button: runs before the rerun it causes, so that rerun draws the new pins."""
    layout, _ = layout_prefs.load(root, project)
    pinned = tuple(p for p in layout.pinned if p != tag) if tag in layout.pinned else (*layout.pinned, tag)
    _save(root, project, dataclasses.replace(layout, pinned=pinned))


def draw(run_dir: Path, records: MetricTable, key: str, root: Path, project: str, owned: set[str] = frozenset()) -> int:
    """Every logged key's panel: filter, pinned section, then a collapsible section per prefix; returns how many."""
    keys = logged_keys(Path(run_dir), records, owned)
    if not keys:
        return 0
    st.subheader("Logged keys", divider="gray")
    key_panels.dropped_note(records)
    layout, problem = layout_prefs.load(root, project)
    if problem:
        st.warning(safe_text.md(problem))
    color = run_color(Path(run_dir).name)
    query = st.text_input("Filter panels", key=f"{key}_filter", placeholder="key name, e.g. train/loss")
    shown = matching(keys, query)
    pinned = layout.pinned
    pins = _Pins(root, project, pinned, key)
    collapsed, opened = list(layout.collapsed), list(layout.opened)
    pinned_here = {t: keys[t] for t in pinned if t in shown}
    if pinned_here:
        st.markdown(f"**{PINNED}** · {len(pinned_here)}")
        _grid(run_dir, records, pinned_here, f"{key}_pin", color, pins)
    for prefix, group in key_panels.sections([t for t in shown if t not in pinned_here]).items():
        default_open = prefix not in collapsed and (len(group) <= OPEN_MAX or prefix in opened)
        box = st.expander(
            f"{safe_text.md(prefix)} · {len(group)}",
            expanded=default_open,
            key=widget_key(key, prefix),
            on_change="rerun",
        )
        if box.open != default_open:  # the user opened or closed it: kept for the project
            collapsed = [c for c in collapsed if c != prefix] + ([] if box.open else [prefix])
            opened = [c for c in opened if c != prefix] + ([prefix] if box.open and len(group) > OPEN_MAX else [])
        if box.open:
            with box:
                _grid(run_dir, records, {t: keys[t] for t in group}, key, color, pins)
    new = layout_prefs.Layout(pinned, tuple(collapsed), tuple(opened))
    if new != layout:
        _save(root, project, new)
    return len(shown)


def _save(root: Path, project: str, layout: layout_prefs.Layout) -> None:
    try:
        layout_prefs.save(root, project, layout)
    except OSError as exc:
        st.caption(safe_text.md(f"{layout_prefs.path(root)}: the panel layout could not be saved ({exc.strerror})."))
