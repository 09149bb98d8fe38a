"""A run's metrics for the pages: bounded columns shared by every session, read only where the file grew."""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path

import streamlit as st

from runstore.metrics import metric_csv
from runstore.metrics.metric_table import MetricTable


@st.cache_resource(max_entries=64, show_spinner=False)
def _metric_table(run_dir: str) -> MetricTable:
    return MetricTable()


def metrics(run_dir: Path) -> MetricTable:
    """A run's metrics as bounded columns, shared by every session and read only where the file grew (a TensorBoard
    log's mirror as the server's logdir watch last synced it: pages never sync)."""
    return _metric_table(str(run_dir)).update(Path(run_dir))


def metrics_csv(run_dir: Path) -> Callable[[], bytes]:
    """A download button's data: the CSV of every record, built from the file only when clicked."""
    return functools.partial(metric_csv.metrics_csv, Path(run_dir))
