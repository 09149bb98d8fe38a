"""jaxdash/pipe_feed.py: messages for a child that reads nothing for a while (the idle-priority writer process
while training takes the cores) never block the sender, arrive whole and in order once it reads, and a child that
ended is reported once, never raised."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

from jaxdash.pipe_feed import PipeFeed

# Reads nothing until the file named by argv[1] exists (or 60 s passed), says which, then copies stdin to argv[2].
LATE_READER = """
import os, shutil, sys, time
deadline = time.monotonic() + 60
while not os.path.exists(sys.argv[1]) and time.monotonic() < deadline:
    time.sleep(0.01)
with open(sys.argv[2], "wb") as out:
    out.write(b"released\\n" if os.path.exists(sys.argv[1]) else b"timed out\\n")
    shutil.copyfileobj(sys.stdin.buffer, out)
"""


def test_messages_past_the_pipe_size_never_wait_for_a_child_that_reads_nothing_yet(tmp_path: Path) -> None:
    release, copied = tmp_path / "release", tmp_path / "copied"
    child = subprocess.Popen([sys.executable, "-c", LATE_READER, str(release), str(copied)], stdin=subprocess.PIPE)
    errors: list[Exception] = []
    feed = PipeFeed(child.stdin, errors.append)
    messages = [bytes([i]) * 100_000 for i in range(40)]  # 4 MB: past any pipe's size
    for message in messages:
        feed.send(message)  # a blocking write would wait here until the child timed out
    release.touch()
    assert feed.close(60)
    assert child.wait(60) == 0
    assert copied.read_bytes() == b"released\n" + b"".join(messages)
    assert errors == []


def test_a_child_that_ended_is_reported_once_and_later_messages_are_dropped(tmp_path: Path) -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"], stdin=subprocess.PIPE)
    child.wait(60)
    heard = threading.Event()
    errors: list[Exception] = []

    def on_error(exc: Exception) -> None:
        errors.append(exc)
        heard.set()

    feed = PipeFeed(child.stdin, on_error)
    for _ in range(5):
        feed.send(b"x" * 100_000)
    assert heard.wait(60)
    feed.send(b"after")
    assert feed.close(60)
    assert feed.failed
    assert len(errors) == 1 and isinstance(errors[0], BrokenPipeError)
