"""The Runs page's runs from the run index (`provider.page`): a page of rows at a time, sorted in SQL, with
their total; the runs the page acts on (the selection, a population's or a W&B group's runs) read from their
folders only when shown, an ended run once while its files stay the same (`provider.read_run_cached`). The index
is kept by this server's keeper (`provider.index_fresh`), started when the page first opens; while it is still
being built the page shows what it has and says how far it is.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path

from dashboard.processes.launch_status import population_members, run_status
from dashboard.reading import provider
from dashboard.reading.provider import IndexedRun
from runstore import launch_files, run_states

PAGE_SIZE = 100  # rows sent to the browser at once


@dataclass
class IndexState:
    """How current the index is for this page run: `indexed` runs of `folders` run folders when still building."""

    current: bool
    indexed: int = 0
    folders: int = 0

    @property
    def building(self) -> bool:
        """Whether the index has fewer runs than the root has folders and no update of ours has just ended."""
        return not self.current and self.indexed < self.folders


QUICK_UPDATE_S = 0.1  # a root whose index updates within this CPU time is always waited for (it costs that long)


def agrees(root: Path) -> bool:
    """Whether the index holds exactly the run folders the server's run watcher sees (runstore/run_watch.py, a
    background thread), each active or not as the watcher sees it: what an update now could change in the list.
    Links directly under the root are the index's alone (listed as damaged, never watched)."""
    try:
        indexed = provider.indexed_activity(root)
    except provider.IndexUnavailable:
        return False
    watched = dict(provider.runs_signature(root))
    extra = indexed.keys() - watched.keys()
    return all(indexed.get(n) == a for n, a in watched.items()) and all(provider.is_link(root / n) for n in extra)


def open_index(root: Path, changed: bool = False) -> IndexState:
    """Start the root's keeper (once a process) and ask it for an update now, waiting for it at most a second.

    A big root's update takes most of that second, so a page does not wait for it while the index agrees with
    the run watcher (`agrees`) and this session `changed` no run (notes, a delete): the keeper's next update
    brings what else changed (a run's new records) within a few seconds, and the watcher reruns the page
    when a run appears, ends or goes."""
    if not changed and provider.index_update_seconds(root) > QUICK_UPDATE_S and agrees(root):
        return IndexState(True)  # the keeper runs (it timed an update): no wake, its next update comes anyway
    if provider.index_fresh(root):
        return IndexState(True)
    return IndexState(False, provider.indexed_count(root), provider.run_folder_count(root))


def _launched(r: IndexedRun, d: Path) -> provider.RunInfo | None:
    """A page launch as the list shows it (None: a population's launch whose members are listed now)."""
    info = provider.launch_info(d)
    if info and info.get("population") and not info.get("group"):
        since = float(info.get("launched") or 0.0) - 1
        members = infos(provider.matching(d.parent, f'kind = "member" and created >= {since!r}'))
        found = population_members(info, members)
        if found:  # remember it, so the launch stays hidden when its members are deleted later
            with contextlib.suppress(OSError):  # another session may be writing the same note
                launch_files.write_launch(d, {**info, "group": found[0].status["group"]})
            return None
    run = provider.RunInfo(d.name, d, r.name, r.task, {}, {}, r.created)
    run.status = run_status(d)
    return run


def info_of(r: IndexedRun) -> provider.RunInfo | None:
    """The run an index row names, read from its folder (None: the folder is gone or holds no run now)."""
    d = Path(r.path)
    if r.kind == "damaged":
        return provider.damaged_run(d, r.message or "damaged", r.name, r.task)
    if r.kind == "launched":
        return _launched(r, d)
    return provider.read_run_cached(d, run_status)  # an ended run as last read while its files are unchanged


def infos(rows: list[IndexedRun]) -> list[provider.RunInfo]:
    """The runs of index rows, in their order, each read from its folder (rows whose folder is gone left out)."""
    return [i for i in map(info_of, rows) if i is not None]


def by_ids(root: Path, ids: list[str]) -> list[provider.RunInfo]:
    """The runs of these ids, in the order given (ids the index does not hold left out)."""
    found = {r.run_id: r for r in provider.matching(root, narrow=provider.Narrow(ids=list(ids)))}
    return infos([found[i] for i in dict.fromkeys(ids) if i in found])


def not_indexed_yet(root: Path, index: IndexState, chosen: list[str], found: set[str]) -> list[str]:
    """The chosen run ids the page did not find that stay selected: while the index is not current (a first
    build of many runs), a run it does not hold yet whose folder is there; its comparison follows once indexed."""
    if index.current:
        return []
    plain = [i for i in chosen if i not in found and i == Path(i).name and i not in (".", "..")]  # a folder's name
    return [i for i in plain if provider.is_run_folder(root / i)]


def related(root: Path, selected: list[provider.RunInfo], wandb_groups: list[str]) -> list[provider.RunInfo]:
    """`selected` and every run of the populations and W&B groups they belong to (for "Select whole ...")."""
    pops = sorted({g for r in selected if (g := r.status.get("group"))})
    out = {r.run_id: r for r in selected}
    for narrow in (provider.Narrow(populations=pops), provider.Narrow(wandb_groups=wandb_groups)):
        if narrow.populations or narrow.wandb_groups:
            for r in infos([r for r in provider.matching(root, narrow=narrow) if r.run_id not in out]):
                out[r.run_id] = r
    return list(out.values())


def active(root: Path) -> list[provider.RunInfo]:
    """The runs the index holds as queued, starting, running or stalled (the page follows their changes)."""
    states = [*run_states.ACTIVE, run_states.STALLED]  # a stalled run is still running: it may move again or end
    with contextlib.suppress(provider.IndexUnavailable):
        return infos(provider.matching(root, narrow=provider.Narrow(states=states)))
    return []
