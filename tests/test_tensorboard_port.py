"""The page's TensorBoard on a port of the user's choosing ($JAXDASH_TENSORBOARD_PORT): one a firewall opens or an
SSH tunnel forwards; a free port when unset. Its address stays the dashboard's and its random path prefix stays."""

from __future__ import annotations

import socket
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import psutil
import pytest

from dashboard.processes import tensorboard_server


def test_tensorboard_serves_on_the_port_the_variable_names(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    port = tensorboard_server.free_port()
    monkeypatch.setenv("JAXDASH_TENSORBOARD_PORT", str(port))
    tb = tensorboard_server.start_tensorboard(tmp_path / "runs", wait_s=60, host="127.0.0.1")
    try:
        url = urllib.parse.urlsplit(tb.url)
        assert url.port == port and len(url.path.strip("/")) >= 20, "the port chosen, the random prefix kept"
        listening = {c.laddr.ip for c in psutil.Process(tb.proc.pid).net_connections("inet") if c.laddr.port == port}
        assert listening == {"127.0.0.1"}, "the address given (the dashboard's), nothing wider"
        with pytest.raises(urllib.error.HTTPError) as bare:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10)
        assert bare.value.code == 404, "without the prefix: nothing"
    finally:
        tensorboard_server.close_tensorboards()


@pytest.mark.parametrize("value", ["tb", "0", "70000", "-1", "8080; rm -rf /"])
def test_a_value_that_is_not_a_port_is_named_with_its_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv("JAXDASH_TENSORBOARD_PORT", value)
    with pytest.raises(RuntimeError, match=r"^\$JAXDASH_TENSORBOARD_PORT=.* is not a port: give a number from 1"):
        tensorboard_server.start_tensorboard(tmp_path / "runs")


def test_a_port_in_use_is_named_before_tensorboard_starts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        monkeypatch.setenv("JAXDASH_TENSORBOARD_PORT", str(port))
        with pytest.raises(RuntimeError, match=rf"JAXDASH_TENSORBOARD_PORT={port} is in use on 127.0.0.1: set a free"):
            tensorboard_server.start_tensorboard(tmp_path / "runs", host="127.0.0.1")
