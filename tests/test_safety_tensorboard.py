"""The TensorBoard the page starts, on a logdir holding a crafted event file: capped, never the machine's memory.

TensorBoard's own reader (its Rust data server, and the Python one it falls back to) allocates the
length a record header claims. The dashboard starts it with its address space capped
(JAXDASH_TENSORBOARD_MEMORY), so a 4 KB file claiming 1.2 GB is refused by the allocator instead.
"""

from __future__ import annotations

import time
from pathlib import Path

import psutil
import pytest

from dashboard.processes import tensorboard_server
from tests.test_safety_logdir import crafted

CAP = 1536 << 20  # a cap the test can exceed on the old code without taking the machine
CLAIM = 1_200_000_000


def _tree_rss(proc: psutil.Process) -> int:
    """Resident bytes of `proc` and its children (TensorBoard and its data server)."""
    total = 0
    for p in [proc, *proc.children(recursive=True)]:
        try:
            total += p.memory_info().rss
        except psutil.Error:
            pass
    return total


def test_tensorboard_on_a_crafted_file_stays_under_its_memory_cap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    logdir = tmp_path / "logs"
    (logdir / "bad").mkdir(parents=True)
    crafted(logdir / "bad" / "events.out.tfevents.1700000000.host", CLAIM, size=CLAIM + 4096)
    monkeypatch.setenv("JAXDASH_TENSORBOARD_MEMORY", str(CAP))
    tb = tensorboard_server.start_tensorboard(logdir, wait_s=60)
    try:
        proc = psutil.Process(tb.proc.pid)
        address_space = [line.split()[3] for line in Path(f"/proc/{tb.proc.pid}/limits").read_text().splitlines()
                         if line.startswith("Max address space")]  # fmt: skip
        assert address_space == [str(CAP)]
        peak, deadline = 0, time.monotonic() + 30
        while time.monotonic() < deadline:  # TensorBoard's first load of the logdir reads the crafted record
            peak = max(peak, _tree_rss(proc))
            text = tb.log.read_text(errors="replace") if tb.log else ""
            if "memory allocation" in text or "MemoryError" in text or "ChecksumError" in text:
                break
            time.sleep(0.2)
        peak = max(peak, _tree_rss(proc))
        assert peak < 700 << 20, f"TensorBoard grew to {peak >> 20} MiB reading a crafted file"
    finally:
        tb.close()
        tb.proc.wait(10)
