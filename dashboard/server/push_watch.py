"""One watcher thread for every open push stream (dashboard/server/push_route.py): what each tab follows, and what it is sent.

Every PUSH_TICK (250 ms) the thread stats the files of each followed run (changes_route.stat_stamp: no file
is read) and compares the list of runs (the run watcher keeps it: provider.runs_signature). Only where a stamp moved does it read:
a changed signature of a trigger's runs ("sig": the page reruns its panel for a new state at once; a change of
records alone goes at most SIG_SHARE times per the trigger's stream gap, the least time the page waits between
two reruns for records), the rows after each feed's cursor ("rows": only bytes not sent yet, in rows_route.rows'
format, one read per run and cursor, every feed of the tick in one event, the cursors then moved past them), and
a run's live numbers ("numbers": at most once per PUSH_NUMBERS). A change of the list of runs (the run watcher's
listener) wakes the thread at once. The stream's own task writes the keep-alives.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from dashboard import refresh_timings
from dashboard.panels import run_numbers
from dashboard.reading import provider
from dashboard.server import changes_route, rows_route, run_lookup

TICK_S = refresh_timings.seconds("push_tick")
NUMBERS_S = refresh_timings.seconds("push_numbers")
MAX_QUEUED = 512  # events a stream's client has not taken: a tab that stopped reading is dropped
SIG_SHARE = 4  # signatures of records alone a trigger is sent per stream gap: a rerun draws records <= 1/4 gap old


@dataclass
class Feed:
    """A chart's rows of `tags` of run `run`, sent from byte `offset` on."""

    run: str
    offset: int
    tags: list[str]
    done: bool = False  # its file was replaced: the page's next figure starts over


@dataclass
class Stream:
    """One tab's stream: what it follows, what it was last sent, and the queue its response reads."""

    sigs: dict[str, list[str]]
    feeds: dict[str, Feed]
    numbers: dict[str, str]
    loop: asyncio.AbstractEventLoop
    sig_gaps: dict[str, float] = field(default_factory=dict)  # key -> its trigger's stream gap, seconds
    queue: asyncio.Queue = field(default_factory=asyncio.Queue)
    stamps: dict[str, str] = field(default_factory=dict)
    listing: Any = None
    sent_sigs: dict[str, str] = field(default_factory=dict)
    sigs_next: dict[str, float] = field(default_factory=dict)  # key -> the soonest a change of records alone may go
    sigs_held: set[str] = field(default_factory=set)  # keys whose change of records alone waits for sigs_next
    numbers_pending: set[str] = field(default_factory=set)  # keys whose run wrote since their numbers went
    numbers_next: dict[str, float] = field(default_factory=dict)  # key -> the soonest its next numbers may go
    closed: bool = False

    def runs(self) -> set[str]:
        """Every run this stream follows."""
        return (
            {i for ids in self.sigs.values() for i in ids}
            | {f.run for f in self.feeds.values()}
            | set(self.numbers.values())
        )

    def send(self, event: str, data: Any) -> None:
        """Queue one event for the response (from any thread); a stream whose client stopped reading is closed."""
        if self.closed:
            return
        if self.queue.qsize() > MAX_QUEUED:
            self.closed = True
            text = None
        else:
            text = f"event: {event}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n"
        try:
            self.loop.call_soon_threadsafe(self.queue.put_nowait, text)
        except RuntimeError:  # the server's loop is gone
            self.closed = True


def numbers_of(run_id: str) -> dict[str, Any] | None:
    """A run's progress line and tile texts (run_numbers), from the status and metric caches the pages share."""
    # run_metrics' st.cache_resource needs the running server: imported at the first stream that asks
    from dashboard.processes.launch_status import run_status
    from dashboard.reading.run_metrics import metrics

    folder = run_lookup.run_folder(run_id)
    return None if folder is None else run_numbers.numbers(run_status(folder), metrics(folder))


def _events_part(sig: str) -> str:
    """The EVENTS hash of a signature "EVENTS.STREAMS" (changes_route.signature)."""
    return sig.split(".", 1)[0]


def _send_sigs(stream: Stream, moved: set[str], new_list: bool, listing: Any, now: float) -> None:
    """Each trigger's signature where its runs moved: a new state at once, records alone once their hold passed."""
    for key, ids in stream.sigs.items():
        due = now >= stream.sigs_next.get(key, 0.0)
        if not (new_list or moved.intersection(ids) or (due and key in stream.sigs_held)):
            continue
        sig = changes_route.signature(ids, listing)
        sent = stream.sent_sigs.get(key)
        if sig == sent:
            stream.sigs_held.discard(key)
            continue
        if not due and sent is not None and _events_part(sig) == _events_part(sent):
            stream.sigs_held.add(key)  # records alone, sent moments ago: the newest goes once the hold passed
            continue
        stream.sigs_held.discard(key)
        stream.sent_sigs[key] = sig
        stream.sigs_next[key] = now + stream.sig_gaps.get(key, 0.0) / SIG_SHARE
        stream.send("sig", {key: sig})


def _send_rows(stream: Stream, moved: set[str]) -> None:
    """The rows after each feed's cursor of a run that moved, in one event: one read per run and cursor."""
    groups: dict[tuple[str, int], list[str]] = {}
    for fid, feed in stream.feeds.items():
        if not feed.done and feed.run in moved:
            groups.setdefault((feed.run, feed.offset), []).append(fid)
    parts: dict[str, Any] = {}
    for (run, offset), fids in groups.items():
        tags = list(dict.fromkeys(t for fid in fids for t in stream.feeds[fid].tags))
        got = rows_route.rows(run, offset, tags)
        for fid in fids:
            feed = stream.feeds[fid]
            if got is None or got.get("behind"):
                feed.done = True
                parts[fid] = got or {"offset": offset, "behind": True}
                continue
            feed.offset = got["offset"]
            mine = {part: {t: got[part][t] for t in feed.tags} for part in ("x", "y", "wall")}
            if got["offset"] != offset and any(mine["x"].values()):  # records of other keys alone: nothing to draw
                parts[fid] = {"offset": got["offset"], **mine}
    if parts:
        stream.send("rows", parts)


def _tick(stream: Stream, stamps: dict[str, str], listing: Any, now: float) -> None:
    """Send `stream` what changed since its last tick (every part of it at its first)."""
    moved = {r for r in stream.runs() if stamps.get(r) != stream.stamps.get(r)}
    new_list = listing != stream.listing
    stream.stamps = {r: stamps.get(r, "-") for r in stream.runs()}
    stream.listing = listing
    _send_sigs(stream, moved, new_list, listing, now)
    _send_rows(stream, moved)
    for key, run in stream.numbers.items():
        if run in moved:
            stream.numbers_pending.add(key)
        if key in stream.numbers_pending and now >= stream.numbers_next.get(key, 0.0):
            stream.numbers_pending.discard(key)
            stream.numbers_next[key] = now + NUMBERS_S
            got = numbers_of(run)
            if got is not None:
                stream.send("numbers", {key: got})


class Hub:
    """The open streams and the one thread that watches their runs (started with the first stream)."""

    def __init__(self) -> None:
        self.streams: list[Stream] = []
        self.lock = threading.Lock()
        self.wake = threading.Event()
        self.thread: threading.Thread | None = None

    def add(self, stream: Stream) -> None:
        """Follow `stream` from now on; its first tick (everything it asked for) comes at once."""
        with self.lock:
            self.streams.append(stream)
            if self.thread is None or not self.thread.is_alive():
                # A change of the list of runs wakes the thread at once (a new run is sent within the run
                # watcher's poll, not a tick after it).
                provider.run_watcher(provider.runs_root()).on_change(self.wake.set)
                self.thread = threading.Thread(target=self._loop, name="push-watch", daemon=True)
                self.thread.start()
        self.wake.set()

    def remove(self, stream: Stream) -> None:
        """Stop following `stream` (its client went)."""
        stream.closed = True
        with self.lock:
            if stream in self.streams:
                self.streams.remove(stream)

    def _loop(self) -> None:
        while True:
            self.wake.wait(TICK_S)
            self.wake.clear()
            with self.lock:
                streams = [s for s in self.streams if not s.closed]
            if not streams:
                continue
            listing = provider.runs_signature(provider.runs_root())
            runs = set().union(*(s.runs() for s in streams))
            stamps = {r: changes_route.stat_stamp(run_lookup.run_folder(r)) for r in runs}
            now = time.monotonic()
            for stream in streams:
                try:
                    _tick(stream, stamps, listing, now)
                except Exception:  # noqa: BLE001 - a damaged run folder must not stop every tab's stream
                    continue


HUB = Hub()
