"""A damaged run never breaks a page: a dozen kinds of damaged run folders next to a good run.

Every page is loaded with AppTest (and, marked `browser`, in Chromium on a real server): no
exception, no "Something went wrong", the good run still listed, each damaged run listed as
"damaged" with a message naming the file, and `?run=<damaged id>` showing that run's message.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from dashboard.panels import safe_text
from runstore import run_folder, run_reads, run_store
from runstore.run_folder import RunFolder
from tests.apptest_pages import app

GOOD_CFG = {"task": "regression", "points": 128, "noise": 0.5, "true_weight": 2.0, "true_bias": -1.0, "lr": 0.005}
BROKEN = "Something went wrong"


def good_run(root: Path, name: str = "good-run") -> Path:
    """A finished regression run written through the run store, with a few metrics."""
    d = run_store.new_run_dir(root, "regression", name)
    RunFolder(d).write_config("regression", GOOD_CFG, name=name)
    RunFolder(d).write_status(state="finished", pid=2**22 + 1, started=time.time() - 10, ended=time.time(), step=30)
    RunFolder(d).append_records(
        [{"step": i, "wall": i * 0.1, "ts": time.time(), "train/loss": 1 / i} for i in (1, 2, 3)]
    )
    return d


def _config(**over: object) -> str:
    doc = {
        "run_id": "x",
        "name": "x",
        "task": "regression",
        "config": GOOD_CFG,
        "created": time.time(),
        "command": None,
    }
    return json.dumps({**doc, **over})


def _status(**over: object) -> str:
    return json.dumps({"state": "finished", "pid": 2**22 + 2, "started": time.time() - 5, "step": 3, **over})


# name -> (files to write, expected words of the damage message). Each folder also gets a metrics.jsonl.
DAMAGED: dict[str, tuple[dict[str, str | bytes], str]] = {
    "cfg-garbage": ({run_folder.CONFIG: "{not json", run_folder.STATUS: _status()}, "config.json: not valid JSON"),
    "cfg-truncated": ({run_folder.CONFIG: _config()[:25]}, "config.json: not valid JSON"),
    "cfg-empty": ({run_folder.CONFIG: ""}, "config.json: empty"),
    "cfg-list": ({run_folder.CONFIG: "[1, 2, 3]"}, "config.json: must be a JSON object, got a list"),
    "cfg-created-str": ({run_folder.CONFIG: _config(created="yesterday")}, "config.json: 'created' must be"),
    "cfg-config-null": ({run_folder.CONFIG: _config(config=None)}, "config.json: 'config' must be an object, got null"),
    "cfg-task-int": ({run_folder.CONFIG: _config(task=5)}, "config.json: 'task' must be a string, got 5"),
    "cfg-hidden-int": (
        {run_folder.CONFIG: _config(task="mnist", config={"hidden": 5, "dataset": "mnist"})},
        "config.json: 'config.hidden' must be a list of integers",
    ),
    "cfg-not-utf8": ({run_folder.CONFIG: b'{"task": "\xff\xfe"}'}, "config.json: not UTF-8"),
    "cfg-deep": (
        {run_folder.CONFIG: "[" * 100_000 + "]" * 100_000},
        "config.json: nested 100,000 deep, over the limit",
    ),
    "cfg-inf-created": (
        {run_folder.CONFIG: _config().replace('"created": ', '"created": Infinity, "x": ')},
        "'created'",
    ),
    "status-list": (
        {run_folder.CONFIG: _config(), run_folder.STATUS: "[1, 2, 3]"},
        "status.json: must be a JSON object",
    ),
    "status-state-int": (
        {run_folder.CONFIG: _config(), run_folder.STATUS: _status(state=7)},
        "status.json: 'state' must",
    ),
    "status-pid-str": (
        {run_folder.CONFIG: _config(), run_folder.STATUS: _status(pid="abc")},
        "status.json: 'pid' must",
    ),
    "status-final-str": (
        {run_folder.CONFIG: _config(), run_folder.STATUS: _status(final={"train/loss": "low"})},
        "status.json: 'final.train/loss' must be a number",
    ),
    "status-final-basis-int": (
        {run_folder.CONFIG: _config(), run_folder.STATUS: _status(final_basis={"train/loss": 5})},
        "status.json: 'final_basis.train/loss' must be a string, got 5",
    ),
    "status-step-str": (
        {run_folder.CONFIG: _config(), run_folder.STATUS: _status(step="ten")},
        "status.json: 'step' must",
    ),
    "status-wandb-url": (
        {run_folder.CONFIG: _config(), run_folder.STATUS: _status(wandb={"url": 5})},
        "status.json: 'wandb.url' must be a string",
    ),
    "status-truncated": (
        {run_folder.CONFIG: _config(), run_folder.STATUS: _status()[:10]},
        "status.json: not valid JSON",
    ),
    "no-config": ({run_folder.STATUS: _status()}, "config.json: missing (the folder has status.json, metrics.jsonl)"),
    "launch-garbage": ({run_folder.LAUNCH: "garbage"}, "launch.json: not valid JSON"),
}
# Not damaged, but hostile content in files the pages read: metrics lines that are not objects, a
# half-written last line, artifacts of the wrong shape. These runs must show normally.
ODD_METRICS = '[1,2]\n"text"\n42\n{"step": 1, "wall": 0.1, "train/loss": "nan"}\nnull\n{"step": 2, "train/loss": 0.5}\n{"step": 3, "tr'


def build(root: Path) -> tuple[Path, dict[str, tuple[Path, str]]]:
    """The good run plus every damaged kind (and an odd-but-valid run); returns the good run and the damaged ones."""
    good = good_run(root)
    damaged = {}
    for kind, (files, expected) in DAMAGED.items():
        d = root / f"20200101-000000-{kind}"
        d.mkdir()
        for name, content in files.items():
            (d / name).write_bytes(content if isinstance(content, bytes) else content.encode())
        (d / run_folder.RECORDS).write_text(ODD_METRICS)
        damaged[kind] = (d, expected)
    (root / "20200101-000000-cfg-is-dir" / run_folder.CONFIG).mkdir(parents=True)
    damaged["cfg-is-dir"] = (root / "20200101-000000-cfg-is-dir", "config.json: cannot be read")
    odd = good_run(root, "odd-files")
    (odd / run_folder.RECORDS).write_text(ODD_METRICS)
    (odd / run_folder.ARTIFACTS).mkdir()
    (odd / run_folder.ARTIFACTS / "data_sample.json").write_text('"oops"')
    (odd / run_folder.ARTIFACTS / "fit.json").write_text('{"weight": "heavy", "bias": [1]}')
    (root / "not-a-run").mkdir()  # an empty folder is no run: not listed
    (root / "stray-file.txt").write_text("hello")
    return good, damaged


@pytest.fixture
def runs(runs_root: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path, dict[str, tuple[Path, str]]]:
    monkeypatch.setenv("JAXDASH_WARM_WORKER", "0")  # no JAX worker process: these pages only read
    good, damaged = build(runs_root)
    return runs_root, good, damaged


def page(path: str | None = None, run: str | None = None) -> AppTest:
    at = app(path, run=run)
    assert not [e.value for e in at.error if BROKEN in e.value]
    return at


def test_run_store_lists_every_damaged_run_with_a_message_naming_the_file(runs) -> None:
    root, good, damaged = runs
    listed = {r.run_id: r for r in run_reads.list_runs(root)}
    assert listed[good.name].status["state"] == "finished"
    assert "not-a-run" not in listed
    for kind, (d, expected) in damaged.items():
        if kind == "launch-garbage":
            assert d.name not in listed  # the dashboard lists a page launch (test below)
            continue
        assert listed[d.name].status["state"] == "damaged", kind
        assert expected in listed[d.name].status["message"], (kind, listed[d.name].status["message"])
    records, _ = RunFolder(good.parent / "20200101-000000-cfg-garbage").records()
    assert [r["step"] for r in records] == [1, 2]  # non-objects skipped, the half-written line left


def test_runs_table_lists_the_good_run_and_every_damaged_run(runs) -> None:
    _, good, damaged = runs
    at = page("views/runs.py")
    df = at.dataframe[0].value
    assert "good-run" in set(df["name"]) and "odd-files" in set(df["name"])
    hurt = df[df["status"] == "damaged"]  # the table shows names, not folder ids
    assert len(hurt) == len(damaged), list(hurt["name"])
    for kind, (_, expected) in damaged.items():
        assert any(expected in m for m in hurt["message"]), (kind, list(hurt["message"]))


@pytest.mark.parametrize("view", ["views/live.py", "views/detail.py"])
def test_each_damaged_run_shows_its_own_message(runs, view: str) -> None:
    _, good, damaged = runs
    for kind, (d, expected) in damaged.items():
        at = page(view, run=d.name)
        assert at.selectbox[0].value == d.name, kind  # never silently another run
        assert any(expected in safe_text.plain(e.value) for e in at.error), (kind, [e.value for e in at.error])


@pytest.mark.parametrize("view", [None, "views/live.py", "views/detail.py", "views/runs.py"])
def test_pages_work_for_the_good_and_odd_runs_next_to_damaged_ones(runs, view: str | None) -> None:
    root, good, _ = runs
    odd = next(d.name for d in root.iterdir() if "odd-files" in d.name)
    for run in (good.name, odd):
        at = page(view, run=run)
        if view in ("views/live.py", "views/detail.py"):
            assert at.selectbox[0].value == run
            assert not at.error, [e.value for e in at.error]


def test_unknown_run_id_says_so(runs) -> None:
    at = page("views/live.py", run="20990101-000000-no-such-run")
    assert any("No run ` 20990101-000000-no-such-run `" in w.value for w in at.warning)  # a code span


def test_delete_removes_a_damaged_run_but_refuses_links_and_outside_folders(runs, tmp_path: Path) -> None:
    root, good, damaged = runs
    d, _ = damaged["status-list"]
    run_store.delete_run(d, root)
    assert not d.exists()
    outside = tmp_path / "precious"
    outside.mkdir()
    (outside / "keep.txt").write_text("keep")
    link = root / "20200101-000000-link"
    link.symlink_to(outside, target_is_directory=True)
    with pytest.raises(ValueError, match="link"):
        run_store.delete_run(link, root)
    with pytest.raises(ValueError, match="not a run inside"):
        run_store.delete_run(outside, root)
    with pytest.raises(ValueError):
        run_store.delete_run(root / good.name / "..", root)
    assert (outside / "keep.txt").exists() and good.exists()


# -- the same folders in a real browser ------------------------------------------------------------


IDLE_JS = "() => !document.querySelector('[data-testid=stStatusWidget]')"  # no script run under way


@pytest.mark.browser
def test_every_page_in_chromium_with_damaged_runs(server, tab) -> None:  # noqa: ANN001
    srv, root = server
    good, damaged = build(root)  # in the session server's runs root (emptied again after the test)
    picks = [damaged[k] for k in ("cfg-created-str", "cfg-config-null", "status-list", "no-config", "cfg-garbage")]
    urls = [("/", "New run"), ("/runs", "Runs & compare"), (f"/live?run={good.name}", "finished")]
    for d, expected in picks:
        urls += [(f"/live?run={d.name}", expected), (f"/detail?run={d.name}", expected)]
    for url, expected in urls:
        tab.goto(srv.url + url)
        tab.get_by_text(expected).first.wait_for(timeout=60_000)
        tab.wait_for_function(IDLE_JS, timeout=60_000, polling=100)  # the page finished its run
        body = tab.inner_text("body")
        assert BROKEN not in body and "Traceback" not in body, (url, body[:2000])
