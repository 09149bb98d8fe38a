"""Odd numbers, odd names and odd flags (#23, items 7-9): a clear message or a working page, never a
traceback. Pages through AppTest, the CSV route on a real server, the CLI as a subprocess."""

from __future__ import annotations

import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from components.series import STALL_S, progress_text
from dashboard.server import csv_route
from runstore import run_folder
from runstore.run_folder import RunFolder
from tests.test_safety_damaged import good_run, page

ROOT = Path(__file__).resolve().parents[1]


def test_huge_steps_and_accuracies_render(runs_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JAXDASH_WARM_WORKER", "0")
    d = good_run(runs_root, "huge-numbers")
    RunFolder(d).append_records([{"step": 1e35, "wall": 5, "train/loss": 0.1, "train/acc": 1e308}])
    detail = page("views/detail.py", d.name)
    assert any("beyond what the page can zoom into" in c.value for c in detail.caption)
    live = page("views/live.py", d.name)
    tiles = {m.label: m.value for m in live.metric}
    assert tiles["train/acc"] == "1e+308 (not a fraction)"
    assert not any("inf%" in str(v) for v in tiles.values())


def test_a_failed_run_with_a_checkpoint_offers_resume(runs_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JAXDASH_WARM_WORKER", "0")
    d = good_run(runs_root, "failed-disk-full")
    message = "No space left on device writing metrics.jsonl. Free some space, then resume the run."
    RunFolder(d).write_status(state="failed", message=message, ended=time.time())
    (d / run_folder.CHECKPOINTS / "30").mkdir(parents=True)
    for view in ("views/detail.py", "views/live.py"):
        at = page(view, d.name)
        assert [b for b in at.button if b.label == "Resume"], view


def test_a_run_that_stopped_moving_says_so() -> None:
    now = time.time()
    status = {"state": "running", "phase": "training", "step": 3312, "total_steps": 200_000, "updated": now}
    status |= {"wall_seconds": 1.0, "steps_per_sec": 3312.0}
    assert "ETA" in progress_text(status, now=now + 1)
    stalled = progress_text(status, now=now + STALL_S + 10)
    assert "no progress for" in stalled and "ETA" not in stalled and "steps/s" not in stalled


def get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=20) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def test_csv_links_work_for_any_folder_name_and_long_ids_get_404(served) -> None:  # noqa: ANN001
    srv, root = served
    for name in ("with spaces", "naïve-日本", "new\nline"):
        d = root / name
        d.mkdir()
        RunFolder(d).write_config("regression", {"lr": 0.1}, name=name)
        RunFolder(d).append_records([{"step": 1, "train/loss": 0.5}])
        status, body = get(srv.url + csv_route.path(name))
        assert status == 200 and body.splitlines()[1] == b"1,0.5", name
    status, body = get(f"{srv.url}/api/runs/{'a' * 10_000}/metrics.csv")
    assert status == 404 and b"No run" in body


def cli(*args: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "training", "regression", "--steps", "20", "--quiet", "--wandb", "disabled", *args]
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_cli_messages_for_files_big_populations_and_absurd_rates(tmp_path: Path) -> None:
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    cases = {
        ("--run-dir", str(a_file)): "is a file, not a folder; give the path of a new",
        ("--runs-root", str(a_file)): f"{a_file} is a file, not a folder; choose a folder",
        ("--population", "lr=" + ",".join(str(i / 1000) for i in range(1, 101))): "makes 100 members; at most 64",
    }
    for args, expected in cases.items():
        out = cli(*args)
        assert out.returncode == 2 and expected in out.stderr and "Traceback" not in out.stderr, (args, out.stderr)
    out = cli("--runs-root", str(tmp_path / "runs"), "--lr", "1e308")
    assert "training diverged" in out.stderr and "--lr 0.001" in out.stderr and "1e+307" not in out.stderr
