"""What the Live page polls to know that something changed: a short text per set of runs.

GET <base>/api/runs/changes?id=A&id=B answers a text (a hash) that changes whenever one of those
runs wrote to metrics.jsonl, status.json, launch.json or process.log, added or replaced a table,
figure or image under artifacts/, or the list of runs changed (a run
started, ended or was deleted: runstore/run_watch.py's signature). The Live page's panel reruns
when it changed (dashboard/panels/refresh_trigger.py), not on a timer: a run that writes nothing
(loading data, compiling, a slow step) costs the page no rerun at all, and one that writes every
few seconds gets a rerun per write. An answer is a few stat calls and folder listings; no file is read.

Served by dashboard/server_app.py (`ROUTE_ON`); without it (AppTest, plain dashboard/app.py) the
panel refreshes on a timer as before.
"""

from __future__ import annotations

import hashlib
import os
import urllib.parse
from typing import Any

from dashboard.server import csv_route, url_paths
from runstore import run_store, run_watch

ROUTE_ON = False  # set by dashboard/server_app.py
MAX_IDS = 64  # a population's members at most (training.cli.MAX_MEMBERS)
FILES = ("metrics.jsonl", "status.json", "launch.json", "process.log")
MEDIA = "artifacts"  # tables, figures, images: written by rename or as new files, so their folders' times move


def route() -> str:
    """The route, under the server's base URL path."""
    return url_paths.under_base("api", "runs", "changes")


def path(run_ids: list[str]) -> str:
    """The URL path (with its query) that answers the signature of `run_ids`."""
    return route() + "?" + urllib.parse.urlencode([("id", i) for i in run_ids[:MAX_IDS]])


def watchable(runs: list[Any]) -> bool:
    """Whether the route is served and answers for every run (each a run folder under the runs root;
    a TensorBoard logdir's mirrored runs are not: their pages refresh on a timer)."""
    return ROUTE_ON and len(runs) <= MAX_IDS and all(csv_route.run_folder(r.run_id) == r.path for r in runs)


def _stamp(folder: os.PathLike | None) -> str:
    if folder is None:
        return "-"
    parts = []
    for name in FILES:
        try:
            st = os.stat(os.path.join(folder, name), follow_symlinks=False)
            parts.append(f"{st.st_size}:{st.st_mtime_ns}")
        except OSError:
            parts.append("0")
    parts += _folder_times(os.path.join(folder, MEDIA), depth=2)
    return ",".join(parts)


def _folder_times(folder: str, depth: int) -> list[str]:
    """The modification times of `folder` and its subfolders `depth` levels down (never through a link)."""
    try:
        st = os.stat(folder, follow_symlinks=False)
        entries = list(os.scandir(folder)) if depth else []
    except OSError:
        return []
    out = [str(st.st_mtime_ns)]
    for entry in sorted(entries, key=lambda e: e.name):
        if entry.is_dir(follow_symlinks=False):
            out += _folder_times(entry.path, depth - 1)
    return out


def signature(run_ids: list[str], listing: Any = None) -> str:
    """The runs' file sizes and times plus the list of runs, hashed: equal while nothing changed.

    listing: the list of runs as a page saw it (run_watch's signature), instead of the current one.
    """
    listing = run_watch.watcher(run_store.runs_root()).current if listing is None else listing
    text = repr(listing) + "|" + "|".join(_stamp(csv_route.run_folder(i)) for i in run_ids[:MAX_IDS])
    return hashlib.blake2b(text.encode("utf-8", "surrogateescape"), digest_size=12).hexdigest()
