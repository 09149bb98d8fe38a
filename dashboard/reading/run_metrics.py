"""A run's metrics for the pages: bounded columns shared by every session, read only where the file grew."""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path

import streamlit as st

from dashboard.reading import provider
from dashboard.reading.provider import MetricTable

# Tables kept: more than a page reads at once (compare: up to 100 runs, views/runs.py's COMPARE_MAX). With fewer,
# a comparison's first tables are gone by the time its last are read, so every page run read all of them again
# and, their tables new, built its figures anew. A table of a few keys is ~1 MB (MetricTable's bounds).
TABLES_KEPT = 128


@st.cache_resource(max_entries=TABLES_KEPT, show_spinner=False)
def _metric_table(run_dir: str) -> MetricTable:
    return provider.metric_table()


def metrics(run_dir: Path) -> MetricTable:
    """A run's metrics as bounded columns, shared by every session and read only where the file grew (a TensorBoard
    log's mirror as the server's logdir watch last synced it: pages never sync)."""
    return _metric_table(str(run_dir)).update(Path(run_dir))


def metrics_csv(run_dir: Path) -> Callable[[], bytes]:
    """A download button's data: the CSV of every record, built from the file only when clicked."""
    return functools.partial(provider.csv_bytes, Path(run_dir))
