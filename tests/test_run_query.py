"""The run query: results over a hand-made set of runs, and malformed queries answered with one line.

Runs are written with runstore's own writers into a real runs root, indexed by `run_index.update`, and
queried through `index_reader.search` (the path the client, the CLI and the Runs page take).
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from runstore import index_reader, run_index, run_notes, run_store
from runstore.run_folder import RunFolder
from runstore.run_query import QueryError, parse


def _run(root: Path, name: str, config: dict, state: str, accs: list[float], tags: list[str] = (), **extra) -> Path:
    d = run_store.new_run_dir(root, "mnist", name)
    RunFolder(d).write_config("mnist", config, name=name, tags=list(tags), **extra)
    RunFolder(d).write_status(state=state)
    RunFolder(d).append_records([{"step": i, "wall": 0.0, "ts": 0.0, "test/acc": a} for i, a in enumerate(accs)])
    return d


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("runs")
    _run(root, "a", {"lr": 0.001, "opt": "adam", "model": {"hidden": 128}, "use_bn": True}, "finished",
         [0.5, 0.95, 0.9], ["baseline"])  # fmt: skip
    _run(root, "b", {"lr": 0.01, "opt": "sgd", "model": {"hidden": 64}, "use_bn": False}, "finished",
         [0.6, 0.85], ["baseline", "sweep"])  # fmt: skip
    c = _run(root, "c", {"lr": 0.1, "opt": "sgd", "model": {"hidden": 256}}, "failed", [0.1, 0.3], ["Sweep"])
    RunFolder(c).write_summary({"best_model": "ckpt-3", "test/acc": 0.25})  # W&B's summary: the last word
    d = _run(root, "d", {"lr": "auto", "warm up": 5}, "stopped", [])
    run_notes.write(d, run_notes.make("delta debug", ["scratch"], "a debug run"))
    assert run_index.update(root).read == 4
    return root


RESULTS = [
    ("", {"a", "b", "c", "delta debug"}),
    ("config.lr < 0.05", {"a", "b"}),  # d's lr is text: not a number, never < 0.05
    ("config.lr = 0.01", {"b"}),
    ('config.lr = "auto"', {"delta debug"}),
    ('config.opt != "sgd"', {"a"}),  # != needs the key: d has no opt
    ('not config.opt = "sgd"', {"a", "delta debug"}),
    ("config.model.hidden >= 128", {"a", "c"}),
    ("params.model.hidden in (64, 256)", {"b", "c"}),
    ("config.use_bn = true", {"a"}),
    ("config.use_bn != true", {"b"}),
    ("config.`warm up` = 5", {"delta debug"}),
    ('config.opt contains "ad"', {"a"}),
    ("summary.test/acc.max > 0.9", {"a"}),
    ("summary.test/acc > 0.88", {"a"}),  # last, as bare summary.<key> means
    ("summary.test/acc.min <= 0.1", {"c"}),
    ("summary.test/acc < 0.29", {"c"}),  # summary.json's value is its last word
    ("metrics.test/acc.max >= 0.3 and summary.test/acc.max < 0.31", {"c"}),
    ('summary.best_model = "ckpt-3"', {"c"}),
    ('tags contains "baseline"', {"a", "b"}),
    ('tags contains "sweep"', {"b", "c"}),  # tags match regardless of case, as the page de-duplicates them
    ('tags in ("scratch", "sweep")', {"b", "c", "delta debug"}),
    ('tags != "baseline"', {"c", "delta debug"}),
    ('state = "finished"', {"a", "b"}),
    ('state in ("failed", "stopped")', {"c", "delta debug"}),
    ('name contains "DEBUG"', {"delta debug"}),
    ('notes contains "debug"', {"delta debug"}),
    ('kind = "client"', {"a", "b", "c", "delta debug"}),
    ('config.lr < 0.05 and summary.test/acc.max > 0.9 and tags contains "baseline"', {"a"}),
    ('state = "failed" or config.lr = 0.001 and tags contains "baseline"', {"a", "c"}),  # and binds first
    ('(state = "failed" or config.lr = 0.001) and tags contains "sweep"', {"c"}),
    ('not (state = "finished" or state = "failed")', {"delta debug"}),
    ("config.missing = 1", set()),
    ("config.lr > -1e9 and created > 0", {"a", "b", "c"}),
]


@pytest.mark.parametrize(("query", "names"), RESULTS, ids=[q or "empty" for q, _ in RESULTS])
def test_query_selects_the_runs_it_describes(root: Path, query: str, names: set[str]) -> None:
    assert {r.name for r in index_reader.search(root, query)} == names


def test_order_by_any_field_empty_values_last(root: Path) -> None:
    by_max = [r.name for r in index_reader.search(root, "", order="-summary.test/acc.max")]
    assert by_max == ["a", "b", "c", "delta debug"]
    assert [r.name for r in index_reader.search(root, "", order="config.model.hidden")][:3] == ["b", "a", "c"]


MALFORMED = [
    ("config.lr <", 12, "expected a value"),
    ("foo = 1", 1, "unknown field 'foo'"),
    ("summary = 1", 1, "unknown field"),
    ("config.lr ~ 0.1", 11, "unexpected character '~'"),
    ("config.lr 0.1", 11, "expected an operator"),
    ("tags < 3", 6, "operator '<' does not apply to tags"),
    ('state > "a"', 7, "operator '>' does not apply to state"),
    ('config.lr < "x"', 13, "expected a number"),
    ("summary.acc.max = true", 19, "expected a number"),
    ('name = "open', 8, "not closed"),
    ("name = 'open", 8, "not closed"),
    ("(config.lr = 1", 15, "expected ')' to close the '(' at position 1"),
    ("config.lr = 1)", 14, "unexpected ')'"),
    ("config.lr = 1 config.opt = 2", 15, "expected 'and', 'or' or the end"),
    ("config.lr = 1 and", 18, "expected config.<key>"),
    ("config.lr in 1, 2", 14, "expected '('"),
    ("config.lr in (1, 2", 19, "expected ',' or ')'"),
    ("config.`lr = 1", 8, "` is not closed"),
    ('"; drop table runs; --', 1, "not closed"),
    ('name = ""; drop table runs; --', 10, "unexpected character ';'"),
    ("name = 'x' or 1=1 --", 19, "unexpected character '-'"),
    ("name = 'x' or 1=1", 15, "expected config.<key>"),
    ("config.lr = 1; delete from runs", 14, "unexpected character ';'"),
    ("state = __import__('os')", 9, "expected a value"),
    ("(" * 40 + "state = 'x'" + ")" * 40, 33, "nested deeper"),
    ("id='x' or " * 250 + "id='x'", 2001, "more than 200 comparisons"),
    ("x" * 5000, 4001, "longer than 4000"),
]


@pytest.mark.parametrize(("query", "position", "phrase"), MALFORMED, ids=[q[:30] for q, _, _ in MALFORMED])
def test_malformed_query_is_one_line_naming_position_and_expectation(
    root: Path, query: str, position: int, phrase: str
) -> None:
    with pytest.raises(QueryError) as err:
        index_reader.search(root, query)
    message = str(err.value)
    assert "\n" not in message and message.startswith(f"query, position {position}: "), message
    assert phrase in message, message
    assert not any(w in message.upper() for w in ("SELECT", "EXISTS", "SQLITE", "WHERE")), message
    assert err.value.position == position


def test_values_travel_as_parameters_never_as_sql(root: Path) -> None:
    hostile = "x'); DROP TABLE runs; --"
    assert index_reader.search(root, f'name = "{hostile}" or config.opt = "{hostile}"') == []
    con = sqlite3.connect(run_index.index_path(root))
    assert con.execute("SELECT count(*) FROM runs").fetchone()[0] == 4  # the table is still there
    con.close()
    assert parse('name = "say \\"hi\\""').field.key == "name"  # escaped quotes stay inside the string


def test_cli_prints_the_runs_and_a_bad_query_as_one_line(root: Path) -> None:
    cmd = [sys.executable, "-m", "jaxdash", "runs", "--runs", str(root)]
    ok = subprocess.run([*cmd, "--filter", "config.lr < 0.05", "--columns", "config.lr,summary.test/acc.max"],
                        capture_output=True, text=True, timeout=60)  # fmt: skip
    assert ok.returncode == 0, ok.stderr
    lines = ok.stdout.splitlines()
    assert lines[0].split() == ["id", "state", "name", "config.lr", "summary.test/acc.max"]
    assert sorted(line.split()[2] for line in lines[1:]) == ["a", "b"] and "0.95" in ok.stdout
    bad = subprocess.run([*cmd, "--filter", 'name = ""; drop table runs; --'], capture_output=True, text=True,
                         timeout=60)  # fmt: skip
    assert bad.returncode == 2 and bad.stdout == ""
    assert bad.stderr.strip().splitlines() == ["jaxdash runs: query, position 10: unexpected character ';'"], bad.stderr
