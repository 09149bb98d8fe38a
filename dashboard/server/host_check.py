"""Serve only the hosts the dashboard listens on: the defence against DNS rebinding.

Binding to 127.0.0.1 keeps other machines out, but not a web page the user visits: a page of
`rebind.attacker.example`, whose name then resolves to 127.0.0.1, reaches the dashboard from the
user's own browser with `Host: rebind.attacker.example:<port>` (and a matching Origin), and could
start, stop and delete runs. So every request, the WebSocket included, must name a host the
server serves (loopback names, the `--server.address` the user chose, the machine's own names and
addresses when it serves all interfaces, and $JAXDASH_ALLOWED_HOSTS for a reverse proxy) on its own
port, and any Origin it carries must be one of those hosts on that port. Everything else gets 403.
"""

from __future__ import annotations

import os
import socket
import urllib.parse
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

LOOPBACK = ("localhost", "127.0.0.1", "::1")
ALL_INTERFACES = ("0.0.0.0", "::", "")
REFUSED = b"Refused: this dashboard serves only its own host names (see README, 'Serving to other machines')."

Scope = dict[str, Any]
ASGIApp = Callable[[Scope, Callable[[], Awaitable[dict]], Callable[[dict], Awaitable[None]]], Awaitable[None]]


def _machine_names() -> set[str]:
    """This machine's host name, full name and interface addresses (when serving every interface)."""
    names = {socket.gethostname().lower(), socket.getfqdn().lower()}
    try:
        import psutil

        names |= {a.address.split("%")[0].lower() for addrs in psutil.net_if_addrs().values() for a in addrs}
    except (ImportError, OSError):
        pass
    return names


def allowed_hosts(address: str | None, extra: Iterable[str] = ()) -> frozenset[str]:
    """The host names (lower case, no port) the server answers for `address` (its --server.address)."""
    names = set(LOOPBACK)
    address = (address or "").strip().lower()
    if address in ALL_INTERFACES:
        names |= _machine_names() if address else set()
    else:
        names.add(address.strip("[]"))
    names |= {h.strip().lower().strip("[]") for h in extra if h.strip()}
    return frozenset(names)


def split_host(value: str) -> tuple[str, int | None]:
    """("host", port) of a Host header or an Origin's netloc ("[::1]:8501" -> ("::1", 8501)); port None if absent."""
    parsed = urllib.parse.urlsplit("//" + value)
    try:
        port = parsed.port
    except ValueError:
        return "", -1  # not a port: never allowed
    return (parsed.hostname or "").lower(), port


class HostCheck:
    """ASGI middleware: 403 for a Host or Origin the server does not serve, on every route and the WebSocket."""

    def __init__(self, app: ASGIApp, address: str | None = None, port: int | None = None) -> None:
        self.app = app
        self.address, self.port = address, port
        self.proxied = frozenset(h.strip().lower() for h in os.environ.get("JAXDASH_ALLOWED_HOSTS", "").split(","))
        self.hosts: frozenset[str] | None = None

    def _settings(self) -> tuple[frozenset[str], int]:
        if self.hosts is None:  # read at the first request, once Streamlit's config is loaded
            from streamlit import config

            address = self.address if self.address is not None else config.get_option("server.address")
            self.port = self.port or int(config.get_option("server.port"))
            self.hosts = allowed_hosts(address, self.proxied)
        return self.hosts, int(self.port or 0)

    def allows(self, host_header: str, origin: str | None) -> bool:
        """True if the Host header (and the Origin, when there is one) name this server on its port.

        A host of $JAXDASH_ALLOWED_HOSTS (a reverse proxy's name) may come on any port.
        """
        hosts, port = self._settings()
        host, host_port = split_host(host_header)
        if host not in hosts or (host_port != port and host not in self.proxied):
            return False
        if origin is None:
            return True
        parts = urllib.parse.urlsplit(origin)
        if parts.scheme not in ("http", "https"):
            return False  # "null" (a sandboxed frame, a file), or another scheme
        o_host, o_port = split_host(parts.netloc)
        o_port = o_port or {"http": 80, "https": 443}[parts.scheme]
        return o_host in hosts and (o_port == port or o_host in self.proxied)

    async def __call__(self, scope: Scope, receive: Callable, send: Callable) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = {k.lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        if self.allows(headers.get(b"host", ""), headers.get(b"origin")):
            await self.app(scope, receive, send)
            return
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})  # before accept: the server answers 403
            return
        await send({"type": "http.response.start", "status": 403, "headers": [(b"content-type", b"text/plain")]})
        await send({"type": "http.response.body", "body": REFUSED})
