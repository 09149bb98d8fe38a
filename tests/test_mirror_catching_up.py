"""A mirrored TensorBoard run says "catching up" until its reader has read to the end of its files (#50, item 9).

Each sync reads at most READ_BUDGET bytes of a file (runstore/event_files.py), so a large logdir is read over
many syncs, and a restarted server reads every file again from the start. Its writer long gone, such a run
read "finished" after the first sync with most of it unread; it is "running" with the phase
"catching up (N% read)" until the last event is in its metrics.jsonl.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from tensorboardX import SummaryWriter

from runstore import event_files, tb_logdir
from runstore.run_folder import RunFolder

EVENTS = 60


def _steps(mirror: Path) -> list[int]:
    return [r["step"] for r in RunFolder(mirror).records()[0] if "loss" in r]


def _sync_to_the_end(logs: Path, runs: Path, mirror: Path, later: float) -> list[tuple[str, str | None, int]]:
    """Sync until the mirror leaves "running"; every sync's (state, phase, rows read)."""
    seen = []
    for _ in range(60):
        tb_logdir.sync(logs, runs, now=later)
        status = tb_logdir.status(mirror)
        seen.append((status["state"], status.get("phase"), len(_steps(mirror))))
        if status["state"] != "running":
            break
    return seen


def test_a_mirror_is_catching_up_until_its_reader_reaches_the_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    logs, runs = tmp_path / "logs", tmp_path / "runs"
    writer = SummaryWriter(str(logs / "big"))
    for s in range(EVENTS):
        writer.add_scalar("loss", 1.0 / (s + 1), s)
    writer.close()  # its writer is gone: nothing but the reader keeps the run from "finished"
    monkeypatch.setattr(event_files, "READ_BUDGET", 400)  # ~10 scalar events a sync
    mirror = tb_logdir.mirror_root(runs) / "big"
    later = time.time() + tb_logdir.RECENT_S + 60  # the files are long idle
    for start in ("first server", "restarted server"):
        seen = _sync_to_the_end(logs, runs, mirror, later)
        state, phase, rows = seen[0]
        assert 0 < rows < EVENTS, (start, seen)  # stopped part-way: the read budget
        assert state == "running" and phase is not None and phase.startswith("catching up ("), (start, seen)
        assert 0 < int(phase.split("(")[1].split("%")[0]) < 100, (start, seen)
        assert all(s == "running" for s, _, n in seen if n < EVENTS), (start, seen)  # never "finished" part-read
        assert seen[-1][0] == "finished" and seen[-1][2] == EVENTS, (start, seen)
        assert "phase" not in tb_logdir.status(mirror), start
        assert _steps(mirror) == list(range(EVENTS))
        tb_logdir._MIRRORS.clear()  # a new server process: each mirror is read again from the start
