"""Strings a run logged (`wandb.log({"phase": "warmup"})`, kept by W&B in its history): a table of step -> text
per key, as W&B's run page lists a string key's values.

Read through runstore.media_store (artifacts/texts/<key>.jsonl, written by the client); the texts are shown
as plain table cells, never as markdown.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from runstore import media_store, safe_files, wandb_reads
from runstore.run_folder import RunFolder

MAX_ROWS = 1000  # the newest steps of a key shown (a string logged every step of a long run)


def _signature(run_dir: Path) -> tuple[tuple[str, int, int], ...]:
    """(name, mtime, size) of every text file: what the cache below is keyed on."""
    root = RunFolder(run_dir).artifacts / "texts"
    if not safe_files.is_real_dir(root):
        return ()
    try:
        return tuple((p.name, p.lstat().st_mtime_ns, p.lstat().st_size) for p in sorted(root.glob("*.jsonl")))
    except OSError:
        return ()


@functools.lru_cache(maxsize=32)
def _read(run_dir: str, signature: tuple) -> dict[str, list[tuple[int, str]]]:
    return media_store.texts(Path(run_dir))


def texts(run_dir: Path) -> dict[str, list[tuple[int, str]]]:
    """media_store.texts, re-read only when a text file changed (a live page reruns for its run's news)."""
    signature = _signature(run_dir)
    return _read(str(run_dir), signature) if signature else {}


def section(run_dir: Path, defs: Mapping[str, Mapping[str, Any]] | None = None) -> int:
    """Every text key of the run under one heading (nothing when there is none); returns how many.

    defs: the run's define_metric definitions; a key defined hidden is not shown.
    """
    found = {
        tag: lines
        for tag, lines in texts(Path(run_dir)).items()
        if lines and not wandb_reads.definition(defs or {}, tag).get("hidden")
    }
    if not found:
        return 0
    st.subheader("Text", divider="gray")
    for tag, lines in found.items():
        shown = lines[-MAX_ROWS:]
        st.text(tag if len(shown) == len(lines) else f"{tag} (the newest {MAX_ROWS} of {len(lines)} steps)")
        frame = pd.DataFrame(shown, columns=["step", tag])
        st.dataframe(frame, hide_index=True)
    return len(found)


def tag_panel(tag: str, lines: list[tuple[int, str]]) -> None:
    """One text key: its newest MAX_ROWS steps as a step -> text table (plain cells, never markdown)."""
    shown = lines[-MAX_ROWS:]
    with st.container(border=True):
        st.text(tag if len(shown) == len(lines) else f"{tag} (the newest {MAX_ROWS} of {len(lines)} steps)")
        st.dataframe(pd.DataFrame(shown, columns=["step", tag]), hide_index=True)
