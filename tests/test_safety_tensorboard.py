"""The TensorBoard the page starts, on a logdir holding a crafted event file: capped, never the machine's memory.

TensorBoard's own reader (its Rust data server, and the Python one it falls back to) allocates the
length a record header claims. The dashboard starts it with the address space of each of its processes
capped (JAXDASH_TENSORBOARD_MEMORY, 1 GiB), so a small file claiming 1.2 GB is refused by the allocator
instead, on every start: the claim alone exceeds the cap, whatever the process had mapped before.
It serves only under a random path prefix that the dashboard's own pages link to (#50, item 7): a request
reaching its port by DNS rebinding, with a foreign Host and without the prefix, gets no data.
"""

from __future__ import annotations

import http.client
import time
import urllib.parse
from pathlib import Path

import psutil
import pytest
from tensorboardX import SummaryWriter

from dashboard.processes import tensorboard_child, tensorboard_server
from tests.test_safety_logdir import crafted

CLAIM = 1_200_000_000  # more than the cap, less than the machine's memory


def _tree_rss(proc: psutil.Process) -> int:
    """Resident bytes of `proc` and its children (TensorBoard and its data server)."""
    total = 0
    for p in [proc, *proc.children(recursive=True)]:
        try:
            total += p.memory_info().rss
        except psutil.Error:
            pass
    return total


def _address_space(pid: int) -> str | None:
    """The "Max address space" soft limit of process `pid` (None once it is gone)."""
    try:
        lines = Path(f"/proc/{pid}/limits").read_text().splitlines()
    except OSError:
        return None
    return next(line.split()[3] for line in lines if line.startswith("Max address space"))


def test_tensorboard_on_a_crafted_file_stays_under_its_memory_cap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    logdir = tmp_path / "logs"
    (logdir / "bad").mkdir(parents=True)
    crafted(logdir / "bad" / "events.out.tfevents.1700000000.host", CLAIM, size=CLAIM + 4096)
    monkeypatch.delenv("JAXDASH_TENSORBOARD_MEMORY", raising=False)
    tb = tensorboard_server.start_tensorboard(logdir, wait_s=60)
    try:
        proc = psutil.Process(tb.proc.pid)
        assert _address_space(proc.pid) == str(tensorboard_child.MEMORY_CAP)
        peak, text, deadline = 0, "", time.monotonic() + 30
        while time.monotonic() < deadline:  # TensorBoard's first load of the logdir reads the crafted record
            peak = max(peak, _tree_rss(proc))
            for child in proc.children(recursive=True):  # the data server, while it lives
                assert _address_space(child.pid) in (str(tensorboard_child.MEMORY_CAP), None)
            text = tb.log.read_text(errors="replace") if tb.log else ""
            if "memory allocation" in text or "MemoryError" in text or "ChecksumError" in text:
                break
            time.sleep(0.2)
        peak = max(peak, _tree_rss(proc))
        assert peak < 700 << 20, f"TensorBoard grew to {peak >> 20} MiB reading a crafted file"
        assert f"memory allocation of {CLAIM + 4} bytes failed" in text, text[-500:]
    finally:
        tb.close()
        tb.proc.wait(10)


def _ask(url: str, path: str, host: str) -> tuple[int, bytes]:
    """(status, body) of a GET of `path` on the server of `url`, with the Host header `host`."""
    parts = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    try:
        conn.request("GET", path, headers={"Host": host})
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def test_tensorboard_answers_only_under_its_unguessable_prefix(tmp_path: Path) -> None:
    """DNS rebinding: a page of rebind.attacker.example, its name resolved to this machine, that found the port
    reaches TensorBoard with a foreign Host; without the prefix only the dashboard's own pages know, no data."""
    writer = SummaryWriter(str(tmp_path / "runs" / "r1"))
    for step in range(3):
        writer.add_scalar("loss", 1.0 / (step + 1), step)
    writer.close()
    tb = tensorboard_server.start_tensorboard(tmp_path / "runs", wait_s=60)
    try:
        parts = urllib.parse.urlsplit(tb.url)
        prefix = parts.path.rstrip("/")  # the path the dashboard's page links to
        own = f"127.0.0.1:{parts.port}"
        deadline = time.monotonic() + 30
        while b"loss" not in _ask(tb.url, f"{prefix}/data/plugin/scalars/tags", own)[1]:
            assert time.monotonic() < deadline, "TensorBoard never served the run at the dashboard's link"
            time.sleep(0.3)
        foreign = f"rebind.attacker.example:{parts.port}"
        for path in ("/", "/data/runs", "/data/plugin/scalars/tags", "/data/plugin/scalars/scalars?run=r1&tag=loss"):
            status, body = _ask(tb.url, path, foreign)
            assert status == 404 and b"loss" not in body and b"r1" not in body, (path, status, body[:200])
        assert len(prefix) > 20, tb.url  # a random token of 128 bits
        cmdline = Path(f"/proc/{tb.proc.pid}/cmdline").read_bytes()
        assert prefix.encode() not in cmdline  # not in `ps`: only the dashboard's pages hold it
    finally:
        tb.close()
        tb.proc.wait(10)
