"""A run's metrics for the pages: bounded columns shared by every session, read only where the file grew."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable
from pathlib import Path

import streamlit as st

from runstore import run_store, tb_logdir
from runstore.metrics import metric_csv
from runstore.metrics.metric_table import MetricTable


@st.cache_resource(max_entries=64, show_spinner=False)
def _metric_table(run_dir: str) -> MetricTable:
    return MetricTable()


def metrics(run_dir: Path) -> MetricTable:
    """A run's metrics as bounded columns, shared by every session and read only where the file grew."""
    logdir = tb_logdir.logdir()
    if logdir is not None and tb_logdir.is_mirror(run_dir):  # new events of a TensorBoard log first
        with contextlib.suppress(OSError):
            tb_logdir.sync_if_due(logdir, run_store.runs_root())
    return _metric_table(str(run_dir)).update(Path(run_dir))


def metrics_csv(run_dir: Path) -> Callable[[], bytes]:
    """A download button's data: the CSV of every record, built from the file only when clicked."""
    return functools.partial(metric_csv.metrics_csv, Path(run_dir))
