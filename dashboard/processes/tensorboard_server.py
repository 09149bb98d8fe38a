"""Serve TensorBoard over the runs root from the dashboard process.

No Streamlit here: `page_tensorboard.tensorboard_url` caches the server this module starts. A server
lives as long as the dashboard (closed at exit; tensorboard_child.py ends it if the dashboard is
killed) and is only as reachable as the page.

TensorBoard answers any Host header, so a page of `rebind.attacker.example` whose name then resolves to
this machine (DNS rebinding) could read it once it finds the port. It serves only under a random path
prefix (`--path_prefix /<token>`, 128 bits, new for each server): everything else is 404, and the token is
known only to the pages this dashboard serves, which are behind its own Host and Origin check
(dashboard/server/host_check.py). The token reaches the child through its environment, never its command
line (`ps`).

Its port is a free one, or $JAXDASH_TENSORBOARD_PORT (a port a firewall opens or an SSH tunnel forwards);
its address is the dashboard's (page_tensorboard.py).
"""

from __future__ import annotations

import atexit
import os
import secrets
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_free(host: str, port: int) -> bool:
    """Whether `port` can be bound on `host` right now."""
    try:
        with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as s:
            s.bind((host, port))
            return True
    except OSError:
        return False


@dataclass
class TensorBoard:
    """A TensorBoard server process over the runs root."""

    proc: subprocess.Popen
    url: str
    logdir: Path
    log: Path | None = None

    def alive(self) -> bool:
        return self.proc.poll() is None

    def close(self) -> None:
        if self.alive():
            self.proc.terminate()
        if self.log is not None:
            self.log.unlink(missing_ok=True)


_TENSORBOARDS: list[TensorBoard] = []


def close_tensorboards() -> None:
    """Terminate every TensorBoard this process started (at exit, and in tests)."""
    while _TENSORBOARDS:
        tb = _TENSORBOARDS.pop()
        tb.close()
        try:
            tb.proc.wait(10)
        except subprocess.TimeoutExpired:
            tb.proc.kill()


CHILD = Path(__file__).with_name("tensorboard_child.py")  # TensorBoard that follows its parent
PREFIX_ENV = "JAXDASH_TENSORBOARD_PREFIX"  # the child's --path_prefix (tensorboard_child.py reads it)
PORT_ENV = "JAXDASH_TENSORBOARD_PORT"
ARENAS = "2"  # glibc malloc arenas: what TensorBoard maps beside its memory cap, small and fixed (tensorboard_child.py)
LOOPBACK = ("127.0.0.1", "localhost", "::1")


def is_loopback(address: str | None) -> bool:
    """True if a server bound to `address` is reachable from this machine only (unset = every interface)."""
    return bool(address) and (address in LOOPBACK or address.startswith("127."))


def configured_port() -> int | None:
    """$JAXDASH_TENSORBOARD_PORT as a port number, or None (unset or empty: a free port each time).

    Raises:
      RuntimeError: naming the variable and the fix, when it is not a number from 1 to 65535.
    """
    text = os.environ.get(PORT_ENV, "").strip()
    if not text:
        return None
    if not text.isdigit() or not 1 <= int(text) <= 65535:
        raise RuntimeError(f"${PORT_ENV}={text[:40]!r} is not a port: give a number from 1 to 65535, or unset it.")
    return int(text)


def start_tensorboard(
    logdir: Path, port: int | None = None, wait_s: float = 30.0, host: str = "127.0.0.1"
) -> TensorBoard:
    """Start `tensorboard --logdir logdir --host host` under a random path prefix and wait until it answers.

    `host` follows the dashboard's own address, so TensorBoard is only as reachable as the page; the
    returned url holds the prefix, without which TensorBoard answers nothing but 404.
    It ends when this process ends, however it ends (tensorboard_child.py watches it).
    Its output goes to a private temp file (mkstemp: mode 0600, never an existing file or link).

    Raises:
      RuntimeError: if it exits or does not answer within `wait_s` (message from its log).
    """
    configured = None if port else configured_port()
    if configured and not port_free(host, configured):  # TensorBoard would only exit with a line in its log
        where = host if host not in ("", "0.0.0.0", "::") else "every interface"
        raise RuntimeError(f"${PORT_ENV}={configured} is in use on {where}: set a free port, or unset it.")
    port = port or configured or free_port()
    cmd = [sys.executable, str(CHILD), str(os.getpid()), "--logdir", str(logdir), "--host", host, "--port", str(port)]
    Path(logdir).mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix="jaxdash-tensorboard-", suffix=".log")
    log_path = Path(name)
    prefix = "/" + secrets.token_urlsafe(16)
    env = {**os.environ, PREFIX_ENV: prefix, "MALLOC_ARENA_MAX": ARENAS}
    with os.fdopen(fd, "wb") as log:
        proc = subprocess.Popen(
            cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True, env=env
        )
    local = "127.0.0.1" if host in ("", "0.0.0.0", "::", "localhost") else host  # where this process can reach it
    url = f"http://{'[' + local + ']' if ':' in local else local}:{port}{prefix}/"
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            last = log_path.read_text(errors="replace").strip().splitlines()[-1:] or ["no output"]
            log_path.unlink(missing_ok=True)
            raise RuntimeError(f"TensorBoard exited ({last[0]}).")
        try:
            with urllib.request.urlopen(url, timeout=1):
                tb = TensorBoard(proc, url, Path(logdir), log_path)
                if not _TENSORBOARDS:
                    atexit.register(close_tensorboards)  # TensorBoard lives as long as the dashboard server
                _TENSORBOARDS.append(tb)
                return tb
        except OSError:
            time.sleep(0.3)
    proc.terminate()
    log_path.unlink(missing_ok=True)
    raise RuntimeError(f"TensorBoard did not answer on {url} within {wait_s:.0f} s.")
