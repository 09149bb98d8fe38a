"""DNS rebinding (#23, item 2): the server answers only its own Host and Origin, on every route and
on the WebSocket, on a real server (raw HTTP, a raw WebSocket handshake) and in Chromium."""

from __future__ import annotations

import base64
import http.client
import json
import os
import socket
import urllib.parse
from pathlib import Path

import pytest

from dashboard.server import host_check
from dashboard.server.serve import Server
from tests.conftest import REBINDING_HOST
from tests.test_safety_damaged import good_run

EVIL = REBINDING_HOST


@pytest.fixture(scope="module")
def served_port(served: tuple[Server, Path]) -> tuple[Server, Path, int]:
    """The module's server, its runs root and its port."""
    srv, root = served
    return srv, root, int(srv.url.rsplit(":", 1)[1])


def http_status(port: int, path: str, host: str, origin: str | None = None) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("GET", path, headers={"Host": host, **({"Origin": origin} if origin else {})})
    response = conn.getresponse()
    return response.status, response.read()


def handshake(port: int, host: str, origin: str) -> str:
    """The status line the server answers a WebSocket upgrade of Streamlit's stream with."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        key = base64.b64encode(os.urandom(16)).decode()
        s.sendall(
            (
                f"GET /_stcore/stream HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\nOrigin: {origin}\r\n\r\n"
            ).encode()
        )
        return s.recv(256).split(b"\r\n")[0].decode()


def test_a_foreign_host_is_refused_on_every_route(served_port) -> None:  # noqa: ANN001
    srv, root, port = served_port
    run = good_run(root, "host-check")
    series = f"/api/runs/{run.name}/series?tag=train%2Floss"
    stream = "/api/stream?q=" + urllib.parse.quote(json.dumps({"s": {"p": [run.name]}, "n": {"n": run.name}}))
    for path in ("/", "/_stcore/health", f"/api/runs/{run.name}/metrics.csv", series, stream, "/static/../index.html"):
        status, body = http_status(port, path, f"{EVIL}:{port}")
        assert status == 403 and b"serves only its own host names" in body, path
    assert http_status(port, series, f"127.0.0.1:{port}")[0] == 200
    gone = ("/api/runs/changes?id=x", f"/api/runs/{run.name}/numbers", "/api/runs/poll?q=%7B%7D")
    for path in (*gone, f"/api/runs/{run.name}/rows?after=0"):  # the push stream took their place
        assert b'<div id="root">' in http_status(port, path, f"127.0.0.1:{port}")[1], path  # the app page
    for path in (
        "/api/runs/.hidden/series?tag=x",
        "/api/stream?q=%7Bnot%20json",
        "/api/stream?q=" + urllib.parse.quote(json.dumps({"s": {"p": "../.."}})),
        "/api/stream?q=" + urllib.parse.quote(json.dumps({"f": {"a": ["run", -1, []]}})),
    ):
        status, body = http_status(port, path, f"127.0.0.1:{port}")
        assert status in (400, 404) and b"Traceback" not in body, path
    assert http_status(port, "/", f"127.0.0.1:{port}")[0] == 200
    assert http_status(port, "/_stcore/health", f"localhost:{port}")[0] == 200
    assert http_status(port, f"/api/runs/{run.name}/metrics.csv", f"127.0.0.1:{port}")[0] == 200


def test_the_websocket_takes_only_our_host_and_origin(served_port) -> None:  # noqa: ANN001
    _, _, port = served_port
    ours = f"127.0.0.1:{port}"
    assert handshake(port, ours, f"http://{ours}").endswith("101 Switching Protocols")
    assert handshake(port, f"localhost:{port}", f"http://localhost:{port}").endswith("101 Switching Protocols")
    assert handshake(port, f"{EVIL}:{port}", f"http://{EVIL}:{port}").endswith("403 Forbidden")
    assert handshake(port, ours, f"http://{EVIL}:{port}").endswith("403 Forbidden")  # our Host, their Origin
    assert handshake(port, ours, f"http://localhost:{port + 1}").endswith("403 Forbidden")  # another local port
    assert handshake(port, ours, "null").endswith("403 Forbidden")


def test_allowed_hosts_follow_the_chosen_address() -> None:
    assert host_check.allowed_hosts("127.0.0.1") == frozenset(host_check.LOOPBACK + ("127.0.0.1",))
    assert "192.168.1.5" in host_check.allowed_hosts("192.168.1.5")
    assert socket.gethostname().lower() in host_check.allowed_hosts("0.0.0.0")
    assert "dash.example.org" in host_check.allowed_hosts("127.0.0.1", ["dash.example.org"])
    assert EVIL not in host_check.allowed_hosts("0.0.0.0")
    assert host_check.split_host("[::1]:8501") == ("::1", 8501)
    assert host_check.split_host("localhost:notaport")[1] == -1


@pytest.mark.browser
def test_a_rebinding_page_cannot_load_the_dashboard_in_chromium(served_port, chromium) -> None:  # noqa: ANN001
    _, root, port = served_port
    good_run(root, "rebind-target")
    context = chromium.new_context()  # the session's browser resolves EVIL to 127.0.0.1
    try:
        page = context.new_page()
        response = page.goto(f"http://{EVIL}:{port}/runs", timeout=30_000)
        assert response is not None and response.status == 403
        assert "serves only its own host names" in page.content()
        page.goto(f"http://127.0.0.1:{port}/runs", timeout=30_000)
        page.get_by_text("rebind-target").first.wait_for(state="attached", timeout=30_000)  # ours still works
    finally:
        context.close()
