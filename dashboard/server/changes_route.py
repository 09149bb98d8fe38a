"""What a page follows to know that something changed: a short text per set of runs.

`signature(ids)`, sent over the tab's push stream (dashboard/server/push_route.py) at once and whenever
it changes, is a text (a hash) that changes whenever one of those
runs wrote to metrics.jsonl, status.json, launch.json, process.log or output.log, added or replaced a table,
figure or image under artifacts/, or the list of runs changed (a run
started, ended or was deleted: runstore/run_watch.py's signature). The Live page's panel reruns
when it changed (dashboard/panels/refresh_trigger.py), not on a timer: a run that writes nothing
(loading data, compiling, a slow step) costs the page no rerun at all, and one that writes every
few seconds gets a rerun per write. An answer is a few stat calls, folder listings and small
status.json reads. The answer has two parts (`signature`): a page whose charts and numbers follow a
run's records by themselves reruns at once for a new state or phase, and for records less often.

Served through the push stream by dashboard/server_app.py (`ROUTE_ON`); without it (AppTest, plain
dashboard/app.py) the panel refreshes on a timer. `stat_stamp` is what the stream's watcher compares
every tick: stat calls only, no file read.
"""

from __future__ import annotations

import hashlib
import os
from typing import Any

from dashboard.reading import provider
from dashboard.server import run_lookup

ROUTE_ON = False  # set by dashboard/server_app.py
MAX_IDS = 64  # a population's members at most (settings.population.MAX_MEMBERS)


def watchable(runs: list[Any]) -> bool:
    """Whether the route is served and answers for every run (each a run folder under the runs root;
    a TensorBoard logdir's mirrored runs are not: their pages refresh on a timer)."""
    return ROUTE_ON and len(runs) <= MAX_IDS and all(run_lookup.run_folder(r.run_id) == r.path for r in runs)


def _stamp(folder: os.PathLike | None) -> str:
    """What a page shows at once when it changes: the run's state and phase, its number of scalar keys (a new
    key gets its panel at once, not at the next rerun for records), its launch file."""
    return "-" if folder is None else provider.event_stamp(folder)


def _stream_stamp(folder: os.PathLike | None) -> str:
    """What grows with every chunk or epoch: its records, its progress, its output, its media."""
    return "-" if folder is None else provider.stream_stamp(folder)


def _hash(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "surrogateescape"), digest_size=12).hexdigest()


def stat_stamp(folder: os.PathLike | None) -> str:
    """Stat calls only (no file read): changes whenever `signature` or `streams` of the run could change."""
    if folder is None:
        return "-"
    return provider.event_files_stamp(folder) + "|" + _stream_stamp(folder)


def streams(run_id: str) -> str:
    """The STREAMS hash of one run alone: it changes when the run wrote records, progress, output or media."""
    return _hash(_stream_stamp(run_lookup.run_folder(run_id)))


def signature(run_ids: list[str], listing: Any = None) -> str:
    """Two hashes as "EVENTS.STREAMS", each equal while nothing of its kind changed.

    EVENTS: the list of runs, each run's state, phase and launch file; STREAMS: each run's
    metrics.jsonl, status.json and process.log sizes and times and its media folders' times (they
    change with every chunk or epoch). A page whose charts and numbers follow the records
    themselves (the push stream's rows and numbers) reruns for STREAMS less often.
    listing: the list of runs as a page saw it (run_watch's signature), instead of the current one.
    """
    listing = provider.runs_signature(provider.runs_root()) if listing is None else listing
    folders = [run_lookup.run_folder(i) for i in run_ids[:MAX_IDS]]
    events = repr(listing) + "|" + "|".join(_stamp(f) for f in folders)
    return _hash(events) + "." + _hash("|".join(_stream_stamp(f) for f in folders))
