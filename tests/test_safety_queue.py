"""The run queue's key and database (#36 items 8, 9): a queue key shorter than 32 bytes or readable by others is
refused in one line naming the file and the fix; an ended row set back to 'queued' never runs twice; a damaged,
read-only or locked queue.db is one line on the Sweeps page, and Start says why it cannot start (no 60 s freeze,
no run outside the queue). Real SQLite, subprocesses, the launcher and the Sweeps page (AppTest)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from dashboard.panels import safe_text
from runstore import run_folder
from settings.queue.store import Queue

REPO = Path(__file__).resolve().parents[1]
USAGE = "usage: python -m training"


@pytest.fixture
def key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This test's queue key path (JAXDASH_CONFIG_DIR), the folder made, no key yet."""
    monkeypatch.setenv("JAXDASH_CONFIG_DIR", str(tmp_path / "me"))
    (tmp_path / "me").mkdir(mode=0o700)
    return tmp_path / "me" / "queue.key"


def write_key(path: Path, data: bytes, mode: int) -> None:
    path.write_bytes(data)
    path.chmod(mode)


@pytest.mark.parametrize("data", [b"", b"k", os.urandom(31)], ids=["empty", "1-byte", "31-bytes"])
def test_a_short_queue_key_is_refused(tmp_path: Path, key: Path, data: bytes) -> None:
    write_key(key, data, 0o600)
    root = tmp_path / "runs"
    with pytest.raises(OSError) as refused:  # signing.KeyRefused
        Queue(root).submit(["tasks"])
    assert str(refused.value) == (
        f"{key}: {len(data)} bytes, a queue key needs at least 32 random bytes; fix: delete it "
        "(jaxdash makes a new one; jobs queued with the old key must be submitted again)"
    )
    assert Queue(root).jobs() == []  # no row was written


def test_a_queue_key_others_can_read_is_refused_and_its_rows_do_not_run(tmp_path: Path, key: Path) -> None:
    root = tmp_path / "runs"
    q = Queue(root)
    job = q.submit(["tasks"])  # made the key (0600), signed with it
    key.chmod(0o644)
    fix = f"{key}: readable by group or others (mode 0644), so they could queue commands as you; fix: chmod 600 {key}"
    with pytest.raises(OSError) as refused:
        q.submit(["tasks"])
    assert str(refused.value) == fix
    assert q.dispatch() == [] and q.state(job) == "refused" and fix in q.job(job)["reason"]
    proc = subprocess.run(
        [sys.executable, "-m", "training", "regression", "--steps", "5", "--queue", "--runs-root", str(root)],
        capture_output=True, text=True, cwd=REPO, timeout=180, env={**os.environ, "WANDB_MODE": "disabled"},
    )  # fmt: skip
    assert proc.returncode == 1 and proc.stderr.strip() == f"error: the run queue cannot be used: {fix}", proc.stderr
    assert not q.log_path(job).exists()  # nothing ran


def test_an_ended_row_set_back_to_queued_never_runs_twice(tmp_path: Path, key: Path) -> None:
    q = Queue(tmp_path / "runs")
    job = q.submit(["tasks"])
    assert q.wait(job, poll=0.1, timeout=120) == "ended"
    assert q.log_path(job).read_text().count(USAGE) == 1
    with sqlite3.connect(q.path) as db:  # what anyone who can write queue.db could do: replay the signed row
        db.execute("update jobs set state='queued', pid=null, ended=null, rc=null where id=?", (job,))
    assert q.dispatch() == []
    assert q.state(job) == "refused" and "already started once" in q.job(job)["reason"]
    time.sleep(1.0)  # had it started, `tasks` prints within a second or two; wait() above took longer
    assert q.log_path(job).read_text().count(USAGE) == 1


def test_a_damaged_record_of_started_jobs_is_named_not_queue_db(tmp_path: Path, key: Path) -> None:
    """queue-spent.db (beside the key) damaged: the line named queue.db and advised moving a healthy queue away."""
    from settings.queue import signing

    q = Queue(tmp_path / "runs")
    job = q.submit(["tasks"])
    spent = signing.spent_path()
    spent.write_bytes(b"this is not a SQLite database" * 100)
    with pytest.raises(OSError) as failed:  # QueueError
        q.dispatch()
    assert str(failed.value) == (
        f"{spent}: damaged (file is not a database); move it away and a new one is made (it records which queued "
        "jobs already started; queue.db is not affected)"
    )
    assert q.state(job) == "queued"  # nothing started, nothing spent: it starts once the file is moved away
    spent.unlink()
    assert q.wait(job, poll=0.1, timeout=120) == "ended"


@contextlib.contextmanager
def read_only(path: Path) -> Iterator[None]:
    """The file `path` cannot be written, even by root (chattr +i), until the block ends (its folder can)."""
    if os.getuid() != 0:
        path.chmod(0o444)
        try:
            yield
        finally:
            path.chmod(0o644)
        return
    if shutil.which("chattr") is None or subprocess.run(["chattr", "+i", str(path)]).returncode != 0:
        pytest.skip("root without chattr +i: no way to make a file read-only here")
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(path)], check=True)


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """Another process holds queue.db's write lock (an exclusive transaction) until the block ends."""
    hold = "import sqlite3,sys,time; db=sqlite3.connect(sys.argv[1], isolation_level=None); "
    hold += "db.execute('begin exclusive'); print('locked', flush=True); time.sleep(600)"
    proc = subprocess.Popen([sys.executable, "-c", hold, str(path)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "locked"
        yield
    finally:
        proc.kill()
        proc.wait()


def sweeps_page(root: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The Sweeps page drawn once (it must finish within 30 s): its error lines."""
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("JAXDASH_RUNS", str(root))
    at = AppTest.from_file(str(REPO / "dashboard" / "views" / "sweep.py"), default_timeout=30).run()
    assert not at.exception, [e.value for e in at.exception]
    return [safe_text.plain(e.value) for e in at.error]  # run data is shown as text: markdown escaped


def start_from_the_page(root: Path) -> tuple[float, Path, dict, dict]:
    """Start a run as the New run page does: (seconds it took, its folder, launch.json, the status the pages show)."""
    from dashboard.processes import launch_status, launcher
    from settings.fields import parse_config
    from training.tasks import load_task

    cfg = parse_config(load_task("regression").Config, {"steps": 20})
    t0 = time.monotonic()
    run_dir = launcher.launch("regression", cfg, wandb_mode="disabled", root=root)
    took = time.monotonic() - t0
    return took, run_dir, json.loads((run_dir / run_folder.LAUNCH).read_text()), launch_status.run_status(run_dir)


@pytest.mark.parametrize("problem", ["damaged", "read-only", "locked"])
def test_a_bad_queue_db_is_one_line_on_the_sweeps_page_and_start_says_why(
    tmp_path: Path, key: Path, monkeypatch: pytest.MonkeyPatch, problem: str
) -> None:
    root = tmp_path / "runs"
    monkeypatch.setenv("JAXDASH_WARM_WORKER", "0")
    monkeypatch.setenv("JAXDASH_RUNS", str(root))
    Queue(root).set_limit(4)
    db = root / "queue.db"
    expected = {"damaged": "damaged", "read-only": "cannot be written", "locked": "locked by another process"}[problem]
    if problem == "damaged":
        db.write_bytes(b"this is not a SQLite database\n" * 200)
    ctx = {"damaged": contextlib.nullcontext(), "read-only": read_only(db), "locked": locked(db)}[problem]
    with ctx:
        errors = sweeps_page(root, monkeypatch)
        assert [e for e in errors if e.startswith(f"Run queue: {db}: {expected}")], errors
        took, run_dir, info, status = start_from_the_page(root)
    assert took < 15, f"Start took {took:.0f} s"
    assert "pid" not in info, "the run was started outside the run queue"
    why = f"Not started: the run queue cannot be used: {db}: {expected}"
    assert status["state"] == "failed" and status["message"].startswith(why), status
    from tests.apptest_pages import app

    live = app("views/live.py", run=run_dir.name)  # where Start leads: the run's Live page says why, in one line
    shown = [safe_text.plain(e.value) for e in live.error]  # run data is shown as text: markdown escaped
    assert [e for e in shown if e.startswith(why) and "\n" not in e], shown


def test_a_damaged_queue_db_at_server_start_is_one_log_line_not_a_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from streamlit.testing.v1 import AppTest

    from tests.apptest_pages import APP

    root = tmp_path / "runs"
    root.mkdir()
    (root / "queue.db").write_bytes(b"this is not a SQLite database\n" * 200)
    monkeypatch.setenv("JAXDASH_WARM_WORKER", "0")
    monkeypatch.setenv("JAXDASH_RUNS", str(root))
    with caplog.at_level("WARNING"):
        at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception
    resumed = [r for r in caplog.records if "resume the run queue" in r.getMessage()]
    assert resumed and all(r.exc_info is None for r in resumed), [r.getMessage() for r in resumed]
    assert "queue.db: damaged" in resumed[0].getMessage() and "\n" not in resumed[0].getMessage()
