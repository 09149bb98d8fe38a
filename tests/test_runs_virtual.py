"""The Runs page at scale: it lists runs from the run index one page at a time (only that page's rows reach the
browser), sorted in SQL across every page, with the total shown; while the index is still being built it shows
what the index holds and says how far it is, never waiting for the build.

The roots are written by the 10,000-run benchmark's generator (benchmarks/run_index.py: plain files, no fsync).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from benchmarks.run_index import make_root
from runstore import run_folder, run_index, run_store
from tests.apptest_pages import app


def _last_acc(d: Path) -> float:
    """A generated run's last test/acc, read from its records file."""
    lines = (d / run_folder.RECORDS).read_text().splitlines()
    return json.loads(lines[-1])["test/acc"]


def test_one_page_of_rows_is_sent_and_a_summary_sort_orders_across_pages(runs_root: Path) -> None:
    make_root(runs_root, 250)
    assert run_index.update(runs_root) is not None  # built, as by a server already running
    at = app("views/runs.py")
    assert not at.exception and not at.error
    assert len(at.dataframe[0].value) == 100  # one page, not 250 rows
    assert any(c.value.startswith("250 runs.") for c in at.caption), [c.value for c in at.caption]
    (pager,) = [n for n in at.number_input if n.key == "runs_page"]
    assert pager.label == "Page (of 3)"

    at.selectbox(key="runs_sort").set_value("summary.test/acc").run()
    by_acc = sorted(run_store.run_folders(runs_root), key=_last_acc, reverse=True)
    names = {json.loads((d / run_folder.CONFIG).read_text())["name"]: _last_acc(d) for d in by_acc}
    expected = [json.loads((d / run_folder.CONFIG).read_text())["name"] for d in by_acc]
    shown = list(at.dataframe[0].value["name"])
    assert shown == expected[:100], "page 1 is not the global top 100 by summary test/acc"
    at.number_input(key="runs_page").set_value(3).run()
    last = list(at.dataframe[0].value["name"])
    assert last == expected[200:] and len(last) == 50 and names[last[0]] <= names[shown[-1]]
    at.toggle(key="runs_sort_desc").set_value(False).run()  # ascending: page 3 is now the top 50
    assert list(at.dataframe[0].value["name"]) == expected[:50][::-1]


def test_while_the_index_is_built_the_page_shows_what_it_holds_and_says_so(runs_root: Path, tmp_path: Path) -> None:
    make_root(spare := tmp_path / "spare", 8)
    folders = sorted(spare.iterdir())
    for d in folders[:3]:
        shutil.move(d, runs_root / d.name)
    with run_index.writer_lock(runs_root) as mine:  # another writer holds the index: the page's keeper waits
        assert mine
        at = app("views/runs.py")
        assert not at.exception
        assert any("Indexing 0 of 3 runs" in c.value for c in at.caption), [c.value for c in at.caption]
        assert len(at.dataframe[0].value) == 0  # an empty table, at once: the page never waits for the build
    assert run_index.update(runs_root) is not None  # 3 runs indexed
    for d in folders[3:]:
        shutil.move(d, runs_root / d.name)
    with run_index.writer_lock(runs_root) as mine:
        assert mine
        at.run()
        assert any("Indexing 3 of 8 runs" in c.value for c in at.caption), [c.value for c in at.caption]
        assert len(at.dataframe[0].value) == 3  # what the index holds so far
    at.run()  # the lock is free: the page's keeper indexes the rest
    assert len(at.dataframe[0].value) == 8 and not any("Indexing" in c.value for c in at.caption)


def test_runs_selected_while_the_index_is_built_stay_selected_and_are_compared_once_indexed(
    runs_root: Path, tmp_path: Path
) -> None:
    """A selection (a `?compare=` link, a pick on another page) of runs the index does not hold yet is kept, not
    dropped, while the index is built; the comparison shows once they are indexed."""
    make_root(spare := tmp_path / "spare", 2)
    for d in sorted(spare.iterdir()):
        shutil.move(d, runs_root / d.name)
    ids = sorted(d.name for d in runs_root.iterdir() if not d.name.startswith("."))
    with run_index.writer_lock(runs_root) as mine:  # another writer holds the index: nothing is indexed yet
        assert mine
        at = app("views/runs.py", selected_ids=ids)
        assert not at.exception
        assert any("Indexing 0 of 2 runs" in c.value for c in at.caption), [c.value for c in at.caption]
        assert sorted(at.session_state["selected_ids"]) == ids
        at.run()  # another rerun while it is still building
        assert sorted(at.session_state["selected_ids"]) == ids
    at.run()  # the lock is free: the page's keeper indexes them
    assert sorted(at.session_state["selected_ids"]) == ids
    assert any(h.value == "Compare 2 runs" for h in at.subheader), [h.value for h in at.subheader]
