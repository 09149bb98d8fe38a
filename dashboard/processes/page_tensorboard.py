"""The page's TensorBoard over the runs root: started on first use, restarted if it died, reached at the
address the browser reached the dashboard by (dashboard/processes/tensorboard_server.py starts it)."""

from __future__ import annotations

import urllib.parse
from pathlib import Path

import streamlit as st

from dashboard.processes import tensorboard_server
from runstore import run_store


def server_address() -> str:
    """The address this server listens on ("" when unset: every interface)."""
    return str(st.get_option("server.address") or "")


def is_shared() -> bool:
    """True when others can reach this server (its address is not loopback)."""
    return not tensorboard_server.is_loopback(server_address())


@st.cache_resource(show_spinner=False)
def _tensorboard(logdir: str, host: str) -> tensorboard_server.TensorBoard:
    return tensorboard_server.start_tensorboard(Path(logdir), host=host)


def tensorboard_url() -> str:
    """URL of this server's TensorBoard over the runs root, started on first use (restarted if it died).

    TensorBoard listens where the dashboard does; when that is not loopback, the link uses the
    host name this browser reached the dashboard by.
    """
    host = server_address() or "0.0.0.0"
    tb = _tensorboard(str(run_store.runs_root()), host)
    if not tb.alive():
        _tensorboard.clear()
        tb = _tensorboard(str(run_store.runs_root()), host)
    if not is_shared():
        return tb.url
    seen = urllib.parse.urlsplit(st.context.url or "").hostname
    parts = urllib.parse.urlsplit(tb.url)
    return parts._replace(netloc=f"{seen}:{parts.port}").geturl() if seen else tb.url
