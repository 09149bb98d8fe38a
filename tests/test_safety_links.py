"""Nothing is written outside the runs root through a link (#36 item 5): a `queue.db` or `sweeps.db` that is a link
to another program's database, a `.queue` folder that is a link, a planted `<job>.log` link and a `--storage
journal:<link>` are refused in one line; the file they point to keeps its bytes. Real SQLite, Optuna, subprocesses
and the Sweeps page (AppTest)."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from dashboard.panels import safe_text
from runstore import run_folder
from settings.queue.store import Queue

REPO = Path(__file__).resolve().parents[1]
TRAIN = [sys.executable, "-m", "training", "regression", "--steps", "5", "--quiet", "--wandb", "disabled"]


@pytest.fixture
def me(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This test's own queue key folder (never the user's ~/.config)."""
    monkeypatch.setenv("JAXDASH_CONFIG_DIR", str(tmp_path / "me"))
    return tmp_path / "me"


def other_program_db(path: Path) -> bytes:
    """Another program's SQLite database (one table, one row); its bytes."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(path) as db:
        db.execute("create table accounts (name text, balance real)")
        db.execute("insert into accounts values ('alice', 100)")
    return path.read_bytes()


def one_line_error(proc: subprocess.CompletedProcess, *words: str) -> str:
    """The command failed with one line on stderr containing `words`, and no traceback."""
    err = proc.stderr.strip()
    assert proc.returncode != 0, proc.stdout[-2000:]
    assert "Traceback" not in err and len(err.splitlines()) == 1, err[-3000:]
    assert all(w in err for w in words), err
    return err


def test_a_linked_queue_db_is_refused_and_never_written(tmp_path: Path, me: Path) -> None:
    root, other = tmp_path / "runs", tmp_path / "other-program" / "app.db"
    root.mkdir()
    before = other_program_db(other)
    (root / "queue.db").symlink_to(other)
    with pytest.raises(OSError) as refused:  # QueueError
        Queue(root)
    assert str(refused.value).startswith(f"{root / 'queue.db'}: is a symbolic link (to {other})")
    proc = subprocess.run([*TRAIN, "--queue", "--runs-root", str(root)], capture_output=True, text=True, cwd=REPO,
                          timeout=180)  # fmt: skip
    one_line_error(proc, "queue.db: is a symbolic link", "remove the link")
    assert other.read_bytes() == before  # no queue table, no row: the other program's file is as it was
    assert not list(root.glob("*/config.json"))  # nothing trained


def test_a_linked_sweeps_db_is_refused_on_the_cli_and_the_sweeps_page(
    tmp_path: Path, me: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from streamlit.testing.v1 import AppTest

    root, other = tmp_path / "runs", tmp_path / "other-program" / "app.db"
    root.mkdir()
    before = other_program_db(other)
    (root / "sweeps.db").symlink_to(other)
    proc = subprocess.run([*TRAIN, "--sweep", "lr=0.1,0.2", "--runs-root", str(root)], capture_output=True,
                          text=True, cwd=REPO, timeout=180)  # fmt: skip
    one_line_error(proc, "sweeps.db: is a symbolic link")
    monkeypatch.setenv("JAXDASH_RUNS", str(root))
    monkeypatch.setenv("JAXDASH_WARM_WORKER", "0")
    at = AppTest.from_file(str(REPO / "dashboard" / "views" / "sweep.py"), default_timeout=60).run()
    assert not at.exception
    refused = f"{root / 'sweeps.db'}: is a symbolic link (to {other}); jaxdash never writes through a link"
    shown = [safe_text.plain(e.value) for e in at.error]  # markdown escaped: a path is text
    assert [e for e in shown if e.startswith(refused)], shown
    assert other.read_bytes() == before  # Optuna created no table in it


def test_a_journal_storage_that_is_a_link_is_refused_in_one_line(tmp_path: Path, me: Path) -> None:
    target, link = tmp_path / "notes.txt", tmp_path / "shared" / "journal.log"
    target.write_text("someone's notes\n")
    link.parent.mkdir()
    link.symlink_to(target)
    for argv in (
        [*TRAIN, "--sweep", "lr=0.1,0.2", "--storage", f"journal:{link}", "--runs-root", str(tmp_path / "runs")],
        [sys.executable, "-m", "training", "worker", "--sweep", "s", "--storage", f"journal:{link}"],
    ):
        proc = subprocess.run(argv, capture_output=True, text=True, cwd=REPO, timeout=180)
        one_line_error(proc, "journal.log: is a symbolic link")
    assert target.read_text() == "someone's notes\n"  # no Optuna record appended
    assert [p.name for p in link.parent.iterdir()] == ["journal.log"]  # no .lock or .claim-lock made beside it


def test_a_linked_queue_folder_or_job_log_never_takes_a_jobs_output(tmp_path: Path, me: Path) -> None:
    """A `.queue` folder that is a link, or a `<job>.log` link planted where the next job's log goes: the job is
    refused with one line (its output would land elsewhere), and the files there keep their bytes."""
    elsewhere, victim = tmp_path / "elsewhere", tmp_path / "victim.txt"
    elsewhere.mkdir()
    victim.write_text("precious\n")

    linked = tmp_path / "runs-a"
    linked.mkdir()
    (linked / ".queue").symlink_to(elsewhere)
    q = Queue(linked)
    job = q.submit(["tasks"])
    assert q.wait(job, poll=0.1, timeout=60) == "refused"
    assert "lies outside" in q.job(job)["reason"] and "\n" not in q.job(job)["reason"]

    planted = tmp_path / "runs-b"
    (planted / ".queue").mkdir(parents=True)
    q = Queue(planted)
    (planted / ".queue" / "1.log").symlink_to(victim)  # job 1 is the first this queue makes
    job = q.submit(["tasks"])
    assert job == 1 and q.wait(job, poll=0.1, timeout=60) == "refused"
    assert "1.log: is a symbolic link" in q.job(job)["reason"]

    assert list(elsewhere.iterdir()) == [] and victim.read_text() == "precious\n"
    mine = q.submit(["tasks"])  # the queue itself still works
    assert q.wait(mine, poll=0.1, timeout=120) == "ended" and "usage" in q.log_path(mine).read_text()


@pytest.mark.parametrize("kind", ["texts", "histograms"])
def test_a_link_planted_as_a_runs_text_or_histogram_file_is_refused_and_its_target_untouched(
    tmp_path: Path, kind: str
) -> None:
    """A client run's strings and histograms are appended to artifacts/<kind>/<tag>.jsonl: a link planted
    under that name (another user's file, /etc/...) is refused in one line naming it, never written through."""
    from runstore import media_store
    from runstore.safe_files import UnsafePath

    run, target = tmp_path / "run", tmp_path / "victim.txt"
    target.write_text("keep me\n")
    (run / run_folder.ARTIFACTS / kind).mkdir(parents=True)
    (run / run_folder.ARTIFACTS / kind / "notes.jsonl").symlink_to(target)
    with pytest.raises(UnsafePath, match="notes.jsonl"):
        if kind == "texts":
            media_store.append_text(run, "notes", 1, "hello")
        else:
            media_store.append_histogram(run, "notes", 1, [1.0], [0.0, 1.0])
    assert target.read_text() == "keep me\n"
    media_store.append_text(run, "other", 2, "fine")  # a plain file beside it is still written
    assert media_store.texts(run)["other"] == [(2, "fine")]
