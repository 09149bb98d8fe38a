"""The Runs page's sort and pager: the order is any field of the run index (sorted in SQL, across every page),
and the table shows one page of rows at a time, so 10,000 runs send the browser 100 rows."""

from __future__ import annotations

import math
import re
from pathlib import Path

import streamlit as st

from dashboard.reading import provider

SORT_KEY, DESC_KEY, PAGE_KEY = "runs_sort", "runs_sort_desc", "runs_page"
BUILTIN = {"created": "started", "name": "name", "state": "status", "task": "task", "group": "group"}
PLAIN_KEY = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_./-]*")  # a key the query language reads without backticks


def field(scope: str, key: str) -> str | None:
    """A key as a field of the query language ("config.lr", "config.`warm up`"); None for a key it cannot name."""
    if PLAIN_KEY.fullmatch(key):
        return f"{scope}.{key}"
    return None if "`" in key else f"{scope}.`{key}`"


def sort_options(root: Path) -> list[str]:
    """What the table can be sorted by: the run's own fields, then each config key and each summary key."""
    try:
        found = [field(s, k) for s in ("config", "summary") for k in provider.keys(root, s)]
    except provider.IndexUnavailable:
        found = []
    return [*BUILTIN, *(f for f in found if f)]


def sort_picker(root: Path, where: object | None = None, desc_where: object | None = None) -> str:
    """A "Sort by" select box and a descending toggle; the order as `provider.page` takes it ("-created")."""
    options = sort_options(root)
    if st.session_state.get(SORT_KEY) not in (None, *options):
        st.session_state[SORT_KEY] = "created"  # a field no run has any more
    chosen = (where or st).selectbox(  # type: ignore[attr-defined]
        "Sort by",
        options,
        key=SORT_KEY,
        format_func=lambda o: BUILTIN.get(o, o),
        help="Any config or summary field (summary.<key>: its last value); sorted over every run, not just this page.",
    )
    desc = (desc_where or where or st).toggle("Descending", value=True, key=DESC_KEY)  # type: ignore[attr-defined]
    return ("-" if desc else "+") + (chosen or "created")


def group_options(root: Path, query: str, narrow: provider.Narrow) -> list[str]:
    """The config keys the runs selected can be grouped by."""
    try:
        return provider.keys(root, "config", query, narrow)
    except provider.IndexUnavailable:
        return []


def final_keys(root: Path) -> list[str]:
    """The summary keys of every run (the groups table's means)."""
    try:
        return provider.keys(root, "summary")
    except provider.IndexUnavailable:
        return []


def pager(total: int, size: int, where: object | None = None) -> int:
    """A page number box when `total` rows fill more than one page of `size`; the first row's offset."""
    pages = max(1, math.ceil(total / size))
    if int(st.session_state.get(PAGE_KEY) or 1) > pages:
        st.session_state[PAGE_KEY] = pages  # the filters left fewer pages
    if pages == 1:
        return 0
    page = (where or st).number_input(  # type: ignore[attr-defined]
        f"Page (of {pages})", min_value=1, max_value=pages, step=1, key=PAGE_KEY
    )
    return (int(page) - 1) * size
