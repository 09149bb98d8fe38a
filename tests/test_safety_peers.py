"""Secrets and peers: no database password at rest or in `ps`; heartbeats of a job's processes are untrusted.

A sweep with `--workers N` on a real PostgreSQL server (password authentication, scram-sha-256,
started as tests/test_sweep_postgres.py starts it) keeps the password out of every file under the
runs root and out of its workers' command lines, and the workers still reach the database. The
files a sweep or the queue make are 0600. Heartbeats (anyone who reaches the coordination
service's port can write them) are checked at their parser and at process 0's Hub.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from tests.test_sweep_postgres import ENV, PASSWORD, TINY, _wait_for, postgres  # noqa: F401 - the fixture
from training.queue.store import Queue


def _cmdlines(pids: set[int]) -> dict[int, bytes]:
    out = {}
    for pid in pids:
        try:
            out[pid] = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            pass  # ended meanwhile
    return out


def _worker_pids(root: Path) -> set[int]:
    return {j["pid"] for j in Queue(root).jobs() if j["pid"] and j["state"] == "running"}


@pytest.mark.slow  # two processes importing and compiling JAX: about half a minute
def test_a_sweeps_workers_get_no_password_on_disk_or_in_ps_and_still_reach_the_server(
    postgres: str,  # noqa: F811 - the fixture
    tmp_path: Path,
) -> None:
    root = tmp_path / "runs"
    argv = ["regression", "--steps", "2000", *TINY, "--runs-root", str(root), "--storage", postgres, "--study", "pw"]
    argv += ["--sweep", "lr=loguniform(0.001,0.1)", "--sweep-method", "random", "--trials", "4"]
    argv += ["--workers", "2", "--max-parallel", "1"]
    sweep = subprocess.Popen(
        [sys.executable, "-m", "training", *argv], env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    seen: dict[int, bytes] = {}

    def worker_seen() -> bool:
        if (root / "queue.db").exists():
            pids = _worker_pids(root) | {c.pid for c in psutil.Process(sweep.pid).children(recursive=True)}
            seen.update(_cmdlines(pids))
        return any(b"worker" in line for line in seen.values())

    try:
        _wait_for("the queued worker's process", worker_seen, procs=(sweep,))
        out, err = sweep.communicate(timeout=400)
    finally:
        if sweep.poll() is None:
            sweep.kill()
    assert sweep.returncode == 0, err[-3000:]
    assert not [pid for pid, line in seen.items() if PASSWORD.encode() in line], seen
    [job] = Queue(root).jobs()
    assert job["state"] == "ended" and job["rc"] == 0, job
    log = Queue(root).log_path(job["id"]).read_text()
    assert json.loads(log.strip().splitlines()[-1])["study"] == "pw", log[-2000:]  # it opened the study
    holding = [p for p in root.rglob("*") if p.is_file() and PASSWORD.encode() in p.read_bytes()]
    assert not holding, holding
    assert stat.S_IMODE((root / "queue.db").stat().st_mode) == 0o600


def test_the_queue_and_a_sweeps_files_are_made_readable_by_their_owner_only(tmp_path: Path, monkeypatch) -> None:
    from training.sweep import study

    monkeypatch.setenv("JAXDASH_CONFIG_DIR", str(tmp_path / "me"))
    old = tmp_path / "old"
    old.mkdir()
    (old / "queue.db").touch(mode=0o644)  # a queue.db made before: its rows may hold a password
    os.chmod(old / "queue.db", 0o644)
    Queue(tmp_path / "new").submit(["regression"])
    Queue(old)
    study.storage(study.default_url(tmp_path))
    study.storage(f"journal:{tmp_path / 'sweep.journal'}")
    for path in (tmp_path / "new" / "queue.db", old / "queue.db", tmp_path / "sweeps.db", tmp_path / "sweep.journal"):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path


def test_a_url_is_stored_without_its_password_and_a_worker_gets_it_from_the_environment(monkeypatch) -> None:
    from training.sweep import server

    url = f"postgresql://team:{PASSWORD}@db.example:5432/sweeps?sslmode=require"
    stored, password = server.without_password(url)
    assert stored == "postgresql://team@db.example:5432/sweeps?sslmode=require" and password == PASSWORD
    assert server.without_password("sqlite:////x/sweeps.db") == ("sqlite:////x/sweeps.db", None)
    monkeypatch.setenv(server.PASSWORD_ENV, PASSWORD)
    assert server.with_env_password(stored) == url
    assert server.with_env_password("postgresql://team:other@h/db") == "postgresql://team:other@h/db"
