"""Sweep workers on a real PostgreSQL server, started and stopped here as a team would run it.

The module starts Debian's PostgreSQL (initdb, pg_ctl) in a temporary data directory, as the
`postgres` user when the tests run as root (postgres refuses root), listening on a free
localhost port with password authentication. A sweep started from the CLI and two `worker`
processes on one runs root finish a 12-trial study, one worker killed with SIGKILL mid-trial:
every trial runs once, the killed one is re-queued, and the Sweeps page reads the study from
$JAXDASH_SWEEP_STORAGE. A bad URL is one line naming it (password hidden) and the fix; workers
claiming at once on the server each take whole programs.
"""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import optuna
import pytest
from optuna.trial import TrialState

from runstore import run_folder, run_store
from runstore.run_folder import RunFolder
from settings.sweep import report
from settings.sweep import study as studies
from settings.sweep.space import parse_space
from training.sweep.command import worker_main
from training.tasks import load_task

PASSWORD = "s3cret-pw"
ENV = {**os.environ, "JAXDASH_SWEEP_GRACE_S": "4", "WANDB_MODE": "disabled"}
TINY = ["--log-every", "10", "--points", "32", "--quiet", "--wandb", "disabled", "--no-tensorboard"]


def _pg_bin() -> Path | None:
    """The newest installed server's bin folder (/usr/lib/postgresql/<ver>/bin), or None."""
    found = [p.parent for p in Path("/usr/lib/postgresql").glob("*/bin/pg_ctl")]
    return max(found, key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0) if found else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run(argv: list[str], cwd: Path, log: Path | None = None, **env: str) -> None:
    proc = subprocess.run(argv, cwd=cwd, env={**os.environ, **env}, capture_output=True, text=True, timeout=120)
    if proc.returncode:
        tail = log.read_text()[-2000:] if log and log.exists() else ""
        raise RuntimeError(f"{' '.join(argv)} failed ({proc.returncode}): {proc.stderr[-2000:]}{tail}")


class Server:
    """A PostgreSQL server in a temporary data directory with a `sweeps` database, run as a user would."""

    def __init__(self, bin_: Path):
        self.bin, self.base = bin_, Path(tempfile.mkdtemp(prefix="jaxdash-pg-"))  # not tmp_path: root's, 0700
        self.as_user: list[str] = []
        if os.geteuid() == 0:  # postgres will not run as root: run it as the user the package made
            pg = pwd.getpwnam("postgres")
            os.chown(self.base, pg.pw_uid, pg.pw_gid)
            self.as_user = ["runuser", "-u", "postgres", "--"]
        self.data, self.log, self.port = self.base / "data", self.base / "server.log", _free_port()
        self.url = f"postgresql://jaxdash:{PASSWORD}@127.0.0.1:{self.port}/sweeps"

    def start(self) -> None:
        pw = self.base / "pw"
        pw.write_text(PASSWORD + "\n")
        if self.as_user:
            shutil.chown(pw, "postgres", "postgres")
        _run(
            [*self.as_user, str(self.bin / "initdb"), "-D", str(self.data), "-U", "jaxdash", f"--pwfile={pw}"]
            + ["--auth-host=scram-sha-256", "--auth-local=trust", "-E", "UTF8", "--no-sync"],
            cwd=self.base,
        )
        opts = f"-p {self.port} -k {self.base} -c listen_addresses=127.0.0.1"
        pg_ctl = [*self.as_user, str(self.bin / "pg_ctl"), "-D", str(self.data)]
        _run([*pg_ctl, "-l", str(self.log), "-o", opts, "-w", "start"], self.base, self.log)
        createdb = [str(self.bin / "createdb"), "-h", "127.0.0.1", "-p", str(self.port), "-U", "jaxdash", "sweeps"]
        _run(createdb, self.base, self.log, PGPASSWORD=PASSWORD)

    def stop(self) -> None:
        """`pg_ctl stop -m fast`: clients are disconnected, as when a database host goes down for a restart."""
        if (self.data / "postmaster.pid").exists():
            pg_ctl = [*self.as_user, str(self.bin / "pg_ctl"), "-D", str(self.data)]
            subprocess.run([*pg_ctl, "-m", "fast", "-w", "stop"], cwd=self.base, capture_output=True, timeout=120)


@contextlib.contextmanager
def postgres_server() -> Iterator[Server]:
    """A started server, stopped and deleted afterwards; skipped where PostgreSQL is not installed (not on CI)."""
    bin_ = _pg_bin()
    if bin_ is None:
        reason = "PostgreSQL is not installed: apt-get install postgresql (./scripts/setup.sh installs it)"
        if os.environ.get("CI"):  # CI installs it (scripts/setup.sh): a missing server there is a failure
            pytest.fail(reason)
        pytest.skip(reason)
    server = Server(bin_)
    try:
        server.start()
        yield server
    finally:
        server.stop()
        shutil.rmtree(server.base, ignore_errors=True)


@pytest.fixture(scope="module")
def postgres() -> Iterator[str]:
    """The URL of a server shared by this module's tests."""
    with postgres_server() as server:
        yield server.url


def _training(argv: list[str]) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "training", *argv], env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def _wait_for(what: str, check, timeout: float = 240.0, procs: tuple = ()):  # noqa: ANN001, ANN202
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        dead = [p for p in procs if p.poll() is not None]
        assert not dead, f"waiting for {what}: a process ended: {dead[0].stderr.read()[-2000:]}"
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def _training_run_of(root: Path, pids: set[int]) -> tuple[Path, int] | None:
    """A run folder that one of `pids` is training, in its first half (a kill there is mid-trial)."""
    for d in run_store.run_folders(root):
        status = RunFolder(d).status()
        if status.get("state") == "running" and status.get("pid") in pids and 0 < (status.get("step") or 0) <= 1500:
            return d, status["pid"]
    return None


@pytest.mark.slow  # three processes importing and compiling JAX: about a minute
def test_cli_and_two_workers_on_postgres_one_killed_finish_12_trials_once(
    postgres: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "runs"
    sweep = ["regression", "--steps", "3000", *TINY, "--runs-root", str(root), "--storage", postgres]
    sweep += ["--sweep", "lr=loguniform(0.001,0.1)", "--sweep-method", "random", "--trials", "12", "--study", "team"]
    cli = _training(sweep)  # machine 1 creates the study and trains; machines 2 and 3 run workers
    _wait_for("the study", lambda: "team" in optuna.get_all_study_names(studies.storage(postgres)), procs=(cli,))
    argv = ["worker", "--sweep", "team", "--storage", postgres, "--runs-root", str(root), "--wandb", "disabled"]
    workers = [_training(argv) for _ in range(2)]
    killed_dir, pid = _wait_for("a worker's trial mid-way", lambda: _training_run_of(root, {w.pid for w in workers}))
    victim = next(w for w in workers if w.pid == pid)
    victim.send_signal(signal.SIGKILL)  # mid-trial: its trial stops beating, is failed after 4 s and re-queued
    victim.wait()
    survivors = [cli, *(w for w in workers if w is not victim)]
    outs = [p.communicate(timeout=500) for p in survivors]
    assert [p.returncode for p in survivors] == [0, 0], [o[1][-2000:] for o in outs]
    assert json.loads(outs[0][0].splitlines()[0]) == {"study": "team", "storage": postgres.replace(PASSWORD, "***")}
    assert all(json.loads(o[0].strip().splitlines()[-1])["trials"] for o in outs)  # both survivors trained trials

    trials = optuna.load_study(study_name="team", storage=studies.storage(postgres)).get_trials()
    done = [t for t in trials if t.state in (TrialState.COMPLETE, TrialState.PRUNED)]
    dead = [t for t in trials if t.state == TrialState.FAIL and "run_id" in t.user_attrs]
    assert len(done) == 12 and [t.user_attrs["run_id"] for t in dead] == [killed_dir.name]
    retry = [t for t in done if t.system_attrs.get("failed_trial") == dead[0].number]
    assert len(retry) == 1 and retry[0].params == dead[0].params  # re-queued once, same settings
    folders = {d.name for d in run_store.run_folders(root)}
    ran = [t.user_attrs["run_id"] for t in trials if "run_id" in t.user_attrs]
    assert len(ran) == len(set(ran)) == 13 and set(ran) == folders  # every trial once, one folder each
    assert RunFolder(killed_dir).status()["state"] == "crashed"
    for t in done:
        cfg = json.loads((root / t.user_attrs["run_id"] / run_folder.CONFIG).read_text())
        assert cfg["sweep"]["study"] == "team" and cfg["config"]["lr"] == pytest.approx(t.params["lr"])

    # What the Sweeps page reads, from the server named by $JAXDASH_SWEEP_STORAGE
    monkeypatch.setenv("JAXDASH_RUNS", str(root))
    monkeypatch.setenv(report.STORAGE_ENV, postgres)
    assert report.default_storage(root) == postgres
    [listed] = [s for s in report.list_studies(postgres) if s["name"] == "team"]
    assert listed["task"] == "regression" and listed["trials"] == len(trials)
    rows = report.trial_rows(optuna.load_study(study_name="team", storage=studies.storage(postgres)))
    assert sum(r["state"] in ("COMPLETE", "PRUNED") for r in rows) == 12
    assert [r["retry_of"] for r in rows if r["retry_of"] is not None] == [dead[0].number]
    from tests.apptest_pages import app

    at = app("views/sweep.py")
    captions = " ".join(c.value for c in at.caption)
    assert "random sweep of regression" in captions and "of 12 trials" in captions, captions
    assert not at.error, [e.value for e in at.error]


@pytest.mark.slow  # a server of its own and a worker compiling JAX: about half a minute
def test_a_worker_that_loses_the_server_mid_sweep_stops_with_one_line(tmp_path: Path) -> None:
    """The database host goes down while a trial trains: the worker ends with one line naming the URL
    (password hidden) and what to do, not a traceback from its heartbeat thread or its tell."""
    with postgres_server() as server:
        space = parse_space(["lr=loguniform(0.001,0.1)"], load_task("regression").Config, "random")
        base = {"steps": 3000, "log_every": 10, "points": 32}
        studies.create("lost", server.url, studies.StudySpec("regression", base, space, "random", 2))
        worker = _training(["worker", "--sweep", "lost", "--storage", server.url, "--runs-root", str(tmp_path)])
        _wait_for("the worker's trial", lambda: _training_run_of(tmp_path, {worker.pid}), procs=(worker,))
        server.stop()
        out, err = worker.communicate(timeout=300)
    assert worker.returncode == 2 and "Traceback" not in err, err[-3000:]
    last = err.strip()
    assert last.splitlines() == [last], err  # nothing from the heartbeat or report threads either
    assert last.startswith("error: --storage " + server.url.replace(PASSWORD, "***") + " failed mid-sweep"), err
    assert "start it again" in last and PASSWORD not in err, err


@pytest.mark.parametrize(
    ("url", "fix"),
    [
        ("postgresql://jaxdash:wrong-pw@127.0.0.1:{port}/sweeps", "password"),  # the server says which
        ("postgresql://jaxdash:{pw}@127.0.0.1:{closed}/sweeps", "server is running"),
        ("postgresql://jaxdash:{pw}@127.0.0.1:{port}/nosuchdb", "createdb"),
        ("postgres://jaxdash:{pw}@127.0.0.1:{port}/sweeps", "write postgresql://"),
    ],
)
def test_a_bad_server_url_is_one_line_naming_it_and_the_fix(postgres: str, url: str, fix: str, capsys) -> None:
    port = postgres.rsplit(":", 1)[1].split("/")[0]
    url = url.format(port=port, pw=PASSWORD, closed=_free_port())
    assert worker_main(["--sweep", "team", "--storage", url]) == 2
    err = capsys.readouterr().err.strip()
    shown = url.replace(PASSWORD, "***").replace("wrong-pw", "***")
    assert err.count("\n") == 0 and err.startswith("error: --storage cannot open " + shown), err
    assert fix in err and PASSWORD not in err and "wrong-pw" not in err, err
    assert "folder" not in err, err  # SQLite's fix, not a server's


def test_a_missing_driver_names_the_package_to_install(postgres: str, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    """Without psycopg, Optuna said 'Failed to import DB access module ... Please install appropriate one'."""
    monkeypatch.setitem(sys.modules, "psycopg", None)  # `import psycopg` fails, as where it is not installed
    url = postgres + "?application_name=no-driver"  # a URL no storage was made for yet in this process
    assert worker_main(["--sweep", "team", "--storage", url]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and url.replace(PASSWORD, "***") in err, err
    assert "driver is not installed" in err and "pip install 'psycopg[binary]'" in err and PASSWORD not in err, err


def test_a_bad_server_url_from_a_real_worker_has_no_traceback(postgres: str, tmp_path: Path) -> None:
    bad = postgres.replace(PASSWORD, "nope")
    proc = subprocess.run(
        [sys.executable, "-m", "training", "worker", "--sweep", "x", "--storage", bad, "--runs-root", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        env=ENV,
    )
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.strip().splitlines() == [proc.stderr.strip()] and "password authentication failed" in proc.stderr
    assert "nope" not in proc.stderr and "***" in proc.stderr  # the password is never printed


def test_workers_claiming_at_once_on_postgres_take_whole_programs(
    postgres: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As with a SQLite file (test_sweep_workers), but the lock is the server's: workers on other machines
    share no file. Without it each claim took some of both programs' grid points."""
    from tests.test_sweep_workers import claims_at_once

    claims = claims_at_once(postgres, monkeypatch)
    assert sorted(claims) == [[32, 32, 32], [64, 64, 64]], claims


@pytest.mark.parametrize("url", ["postgresql://team:s3cret-pw@127.0.0.1:1/sweeps", "postgresql://team:s3cret-pw@:bad"])
def test_the_sweeps_page_never_shows_a_server_password(runs_root: Path, monkeypatch, url: str) -> None:
    """The Sweeps page on a server it cannot reach: one line naming the URL with its password hidden, no traceback."""
    from dashboard.panels.safe_text import plain
    from tests.apptest_pages import app

    monkeypatch.setenv("JAXDASH_SWEEP_STORAGE", url)
    at = app("views/sweep.py")
    shown = [plain(e.value) for e in at.error] + [plain(e.value) for e in at.warning]  # as the page shows them
    assert shown, "the page said nothing about the unreachable server"
    assert not any("s3cret-pw" in text for text in shown), shown
    assert any("***" in text or "postgresql://..." in text or "postgresql://team" in text for text in shown), shown
