"""What the push stream's watcher sends a tab, tick by tick, on a fake clock (dashboard/server/push_watch.py).

Real run folders, the watcher's own tick function, and a clock the test moves: a trigger is sent a change of
records alone at most SIG_SHARE times per its stream gap, and always the newest, even when the run then went
quiet; a new state goes at once, held change or not; every feed's rows of one tick come in one event, one read
per run and cursor.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks.dashboard_latency import fake_running_run
from dashboard.server import changes_route, push_watch, rows_route, run_lookup
from runstore.run_folder import RunFolder

TICK_S = push_watch.TICK_S


class Loop:
    """The server's event loop as the watcher uses it: what it would queue for the response, in order."""

    def __init__(self) -> None:
        self.events: list[tuple[str, Any]] = []

    def call_soon_threadsafe(self, put: Any, text: str | None) -> None:
        lines = (text or "").splitlines()
        self.events.append((lines[0].removeprefix("event: "), json.loads(lines[1].removeprefix("data: "))))

    def named(self, name: str) -> list[Any]:
        return [data for event, data in self.events if event == name]


def _stream(sigs: dict, feeds: dict | None = None, gaps: dict | None = None) -> tuple[push_watch.Stream, Loop]:
    loop = Loop()
    return push_watch.Stream(sigs, feeds or {}, {}, loop, sig_gaps=gaps or {}), loop  # type: ignore[arg-type]


def _tick(stream: push_watch.Stream, now: float) -> None:
    stamps = {r: changes_route.stat_stamp(run_lookup.run_folder(r)) for r in stream.runs()}
    push_watch._tick(stream, stamps, "listing", now)


def _append(run: Path, step: int, **more: Any) -> None:
    RunFolder(run).append_records([{"step": step, "wall": float(step), "train/loss": 1 / (step + 1), **more}])


def test_records_alone_go_four_times_a_gap_the_newest_last_and_a_new_state_at_once(runs_root: Path) -> None:
    run = fake_running_run(runs_root)
    gap_s = 4.0
    stream, loop = _stream({"live": [run.name]}, gaps={"live": gap_s})
    sent_at: list[float] = []
    for i in range(40):  # 10 s of a run that writes every tick
        now = i * TICK_S
        _append(run, i + 1)
        before = len(loop.events)
        _tick(stream, now)
        sent_at += [now] * (len(loop.events) - before)
    assert sent_at == [k * gap_s / push_watch.SIG_SHARE for k in range(10)], sent_at
    last = loop.named("sig")[-1]["live"]
    _tick(stream, 10.0)  # the run went quiet: its last records' change still goes once the hold passed
    assert loop.named("sig")[-1]["live"] != last
    assert loop.named("sig")[-1]["live"] == changes_route.signature([run.name], "listing")
    _append(run, 100)
    _tick(stream, 10.25)  # records alone within the hold: held
    assert len(loop.named("sig")) == 11
    RunFolder(run).write_status(state="finished")
    _tick(stream, 10.5)  # a new state: at once
    assert len(loop.named("sig")) == 12
    _tick(stream, 12.0)
    assert len(loop.named("sig")) == 12  # nothing new: nothing sent
    assert loop.named("sig")[-1]["live"] == changes_route.signature([run.name], "listing")


def test_a_trigger_without_a_gap_is_sent_every_change(runs_root: Path) -> None:
    run = fake_running_run(runs_root)
    stream, loop = _stream({"runs": [run.name]})
    for i in range(8):
        _append(run, i + 1)
        _tick(stream, i * TICK_S)
    assert len(loop.named("sig")) == 8


def test_every_feed_of_a_tick_in_one_event_one_read_per_run_and_cursor(
    runs_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run, other = fake_running_run(runs_root), fake_running_run(runs_root)
    at, other_at = RunFolder(run).records_size(), RunFolder(other).records_size()
    feeds = {
        "loss": push_watch.Feed(run.name, at, ["train/loss"]),
        "acc": push_watch.Feed(run.name, at, ["test/acc"]),
        "both": push_watch.Feed(run.name, at, ["train/loss", "test/acc"]),
        "other": push_watch.Feed(other.name, other_at, ["train/loss"]),
    }
    stream, loop = _stream({}, feeds)
    reads: list[tuple[str, int, list[str]]] = []
    real_rows = rows_route.rows
    monkeypatch.setattr(rows_route, "rows", lambda r, o, t: reads.append((r, o, sorted(t))) or real_rows(r, o, t))
    _tick(stream, 0.0)
    assert loop.events == [] and len(reads) == 2  # the first tick reads each run once: nothing after the cursors
    reads.clear()
    _append(run, 1, **{"test/acc": 0.5})
    _append(other, 1)
    _tick(stream, TICK_S)
    assert sorted(reads) == sorted([(run.name, at, ["test/acc", "train/loss"]), (other.name, other_at, ["train/loss"])])
    [rows] = loop.named("rows")
    assert sorted(rows) == ["acc", "both", "loss", "other"]
    assert rows["loss"]["x"] == {"train/loss": [1]} and rows["acc"]["y"] == {"test/acc": [0.5]}
    assert rows["both"]["x"] == {"train/loss": [1], "test/acc": [1]}
    assert rows["loss"]["offset"] == RunFolder(run).records_size() == stream.feeds["acc"].offset
    _append(run, 2)  # train/loss alone: the feed of test/acc gets nothing, its cursor moves on
    _tick(stream, 2 * TICK_S)
    assert sorted(loop.named("rows")[-1]) == ["both", "loss"]
    assert stream.feeds["acc"].offset == RunFolder(run).records_size()
