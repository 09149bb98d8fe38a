"""The page's one poll (dashboard/server/poll_route.py): signatures as the change route answers them,
a run's numbers only when it wrote something since the page's last ones, and a clear 400 for a bad query."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.dashboard_latency import fake_running_run
from dashboard.server import changes_route, poll_route
from runstore.run_folder import RunFolder


def _numbers_of(run_id: str) -> dict:
    return {"text": f"numbers of {run_id}", "fraction": 0.5, "tiles": {}}


def _ask(query: dict) -> dict:
    return poll_route.answer(json.dumps(query), _numbers_of)


def test_one_poll_answers_each_signature_and_numbers_only_after_a_write(runs_root: Path) -> None:
    run = fake_running_run(runs_root)
    query = {"s": {"runs_watch": [], "panel": [run.name]}, "n": {"numbers": [run.name, ""]}}
    first = _ask(query)
    assert first["s"] == {"runs_watch": changes_route.signature([]), "panel": changes_route.signature([run.name])}
    assert first["n"]["numbers"]["text"] == f"numbers of {run.name}"
    seen = first["n"]["numbers"]["streams"]
    assert seen == changes_route.signature([run.name]).split(".")[1]  # one run: its streams hash
    query["n"]["numbers"][1] = seen
    assert _ask(query)["n"] == {"numbers": {"streams": seen}}  # nothing written: no texts to draw
    RunFolder(run).append_records([{"step": 1, "train/loss": 0.5}])
    again = _ask(query)
    assert again["n"]["numbers"]["streams"] != seen and "text" in again["n"]["numbers"]
    assert again["s"]["panel"].split(".")[1] != first["s"]["panel"].split(".")[1]


def test_an_unknown_run_gets_no_numbers_and_a_bad_query_names_its_part(runs_root: Path) -> None:
    got = poll_route.answer(json.dumps({"n": {"k": ["../etc", ""]}}), lambda run_id: None)
    assert got["n"] == {"k": None}
    for text, part in [
        ("{not json", "q: JSON"),
        ("[1]", "q: a JSON object"),
        (json.dumps({"s": {"a": "run"}}), "q.s.a: a list of run ids"),
        (json.dumps({"n": {"k": ["run"]}}), "q.n.k: [run id, streams seen]"),
        (json.dumps({"s": {str(i): [] for i in range(9)}}), "at most 8 keys"),
        ("x" * 20_000, "at most 16384 characters"),
    ]:
        with pytest.raises(poll_route.BadPoll, match=part.replace("[", r"\[").replace("]", r"\]")):
            poll_route.parse(text)
