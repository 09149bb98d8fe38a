"""Run detail's files: what `wandb.save` kept (files/) and every `log_artifact` version (artifacts/logged/).

Tables list names, types, versions, file counts and sizes; a picked file up to provider.SMALL_FILE gets a
download button whose bytes are read only when it is clicked. Names are a run's data: shown in tables and
select boxes (plain text), never in markdown.
"""

from __future__ import annotations

import mimetypes
from collections.abc import Sequence
from pathlib import Path

import pandas as pd
import streamlit as st

from dashboard.panels.image_steps_panel import widget_key
from dashboard.reading import provider


def size_text(size: int) -> str:
    """Bytes for people: "812 B", "3.4 KB", "1.2 MB"."""
    value = float(size)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} B"


def files_table(entries: Sequence[provider.FileEntry]) -> pd.DataFrame:
    """One row per file: its name and size."""
    return pd.DataFrame({"file": [e.name for e in entries], "size": [size_text(e.size) for e in entries]})


def download_picker(entries: Sequence[provider.FileEntry], key: str) -> None:
    """A select box of the files and a download button for the picked one (when it is small enough)."""
    if not entries:
        return
    names = [e.name for e in entries]
    left, right = st.columns([3, 1], vertical_alignment="bottom")
    picked = left.selectbox("File", names, key=f"{key}_pick") if len(names) > 1 else names[0]
    entry = entries[names.index(picked)] if picked in names else entries[0]
    if entry.size > provider.SMALL_FILE:
        right.caption(f"Over {provider.SMALL_FILE >> 20} MB: open it in the run folder.")
        return
    right.download_button(
        "Download",
        data=lambda: provider.file_bytes(entry) or b"",  # read when clicked, not at every rerun
        file_name=Path(entry.name).name,
        mime=mimetypes.guess_type(entry.name)[0] or "application/octet-stream",
        key=f"{key}_download",
        icon=":material/download:",
    )


def artifacts_table(found: Sequence[provider.ArtifactEntry]) -> pd.DataFrame:
    """One row per artifact version: name, type, version, aliases, files, size."""
    return pd.DataFrame(
        {
            "artifact": [a.name for a in found],
            "type": [a.type for a in found],
            "version": [a.version for a in found],
            "aliases": [", ".join(a.aliases) for a in found],
            "files": [len(a.files) for a in found],
            "size": [size_text(a.size) for a in found],
        }
    )


def section(run_dir: Path, key: str) -> int:
    """Saved files and logged artifacts (nothing when there are none); returns how many entries were listed."""
    saved = provider.saved_files(run_dir)
    found = provider.logged_artifacts(run_dir)
    if not saved and not found:
        return 0
    st.subheader("Files and artifacts", divider="gray")
    if saved:
        st.caption(f"Saved files (wandb.save): {len(saved)}, in the run folder's files/.")
        st.dataframe(files_table(saved), hide_index=True)
        download_picker(saved, widget_key(key, "saved"))
    if found:
        st.caption(f"Logged artifacts (log_artifact): {len(found)} version(s), in artifacts/logged/.")
        st.dataframe(artifacts_table(found), hide_index=True)
        labels = [f"{a.name}:{a.version}" for a in found]
        label = st.selectbox("Artifact", labels, key=f"{key}_artifact") if len(found) > 1 else labels[0]
        art = found[labels.index(label)] if label in labels else found[0]
        if art.description:
            st.text(art.description)
        st.dataframe(files_table(art.files), hide_index=True)
        if art.references:
            st.text("References: " + ", ".join(art.references))
        download_picker(art.files, widget_key(key, f"artifact {label}"))
    return len(saved) + len(found)
