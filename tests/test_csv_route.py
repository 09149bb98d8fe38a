"""dashboard/server_app.py's GET /api/runs/<id>/metrics.csv on a real server: every record, streamed;
a clear 404 for an unknown run or one without metrics; nothing outside the runs root."""

from __future__ import annotations

import csv
import io
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from dashboard.server import run_lookup
from runstore import run_store
from runstore.run_folder import RunFolder


def get(url: str) -> tuple[int, dict[str, str], bytes]:
    try:
        with urllib.request.urlopen(url, timeout=30) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read()


def test_the_route_sends_every_record_as_csv(served) -> None:  # noqa: ANN001
    srv, root = served
    d = run_store.new_run_dir(root, "regression", "csv")
    records = [{"step": s, "wall": s / 10, "train/loss": 1 / s} for s in range(1, 2001)]
    records[5]["test/acc"] = 0.5  # a key only one record has: an empty cell elsewhere
    RunFolder(d).append_records(records)
    status, headers, body = get(f"{srv.url}/api/runs/{d.name}/metrics.csv")
    assert status == 200 and headers["content-type"].startswith("text/csv")
    assert headers["content-disposition"].startswith(f'attachment; filename="{d.name}.csv"; filename*=UTF-8')
    rows = list(csv.DictReader(io.StringIO(body.decode())))
    assert len(rows) == 2000 and rows[0]["step"] == "1" and float(rows[9]["train/loss"]) == pytest.approx(0.1)
    assert rows[5]["test/acc"] == "0.5" and rows[6]["test/acc"] == ""


def test_unknown_runs_and_paths_get_a_message_not_a_file(served) -> None:  # noqa: ANN001
    srv, root = served
    empty = run_store.new_run_dir(root, "regression", "empty")
    RunFolder(empty).write_status(state="starting", pid=1, started=time.time())
    status, _, body = get(f"{srv.url}/api/runs/{empty.name}/metrics.csv")
    assert status == 404 and b"has logged no metrics yet" in body
    status, _, body = get(f"{srv.url}/api/runs/no-such-run/metrics.csv")
    assert status == 404 and b"No run 'no-such-run' under" in body
    (root.parent / "outside").mkdir()
    for folder in (root.parent, root.parent / "outside"):  # metrics outside the runs root: never sent
        RunFolder(folder).append_records([{"step": 1, "train/loss": 1.0}])
    for sneaky in ("..%2Foutside", "..", "%2Fetc", ".hidden"):  # refused, or not this route (the app's page)
        status, headers, body = get(f"{srv.url}/api/runs/{sneaky}/metrics.csv")
        assert "attachment" not in headers.get("content-disposition", ""), (sneaky, status)
        assert b"train/loss" not in body and b"root:" not in body, (sneaky, status, body[:200])


def test_only_plain_folder_names_under_the_runs_root_are_runs(tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    root = tmp_path / "runs"
    (root / "a-run").mkdir(parents=True)
    (tmp_path / "elsewhere").mkdir()
    (root / "link").symlink_to(tmp_path / "elsewhere")
    monkeypatch.setenv("JAXDASH_RUNS", str(root))
    assert run_lookup.run_folder("a-run") == (root / "a-run").resolve()
    for name in ("..", "../elsewhere", "/etc", "link", ".hidden", "a-run/..", "missing", ""):
        assert run_lookup.run_folder(name) is None, name
