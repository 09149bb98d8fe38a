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

from runstore import run_folder
from runstore.run_folder import RunFolder
from settings.queue.store import Queue
from tests.test_sweep_postgres import ENV, PASSWORD, TINY, _wait_for, postgres  # noqa: F401 - the fixture


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
    own_line = Path(f"/proc/{sweep.pid}/cmdline").read_bytes()  # the command the user typed, password and all

    def worker_seen() -> bool:
        if (root / "queue.db").exists():
            pids = _worker_pids(root) | {c.pid for c in psutil.Process(sweep.pid).children(recursive=True)}
            # A child caught between its fork and its exec still shows its parent's command line: not its own.
            seen.update({pid: line for pid, line in _cmdlines(pids).items() if line != own_line})
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
    from settings.sweep import study

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
    from settings.sweep import server

    url = f"postgresql://team:{PASSWORD}@db.example:5432/sweeps?sslmode=require"
    stored, password = server.without_password(url)
    assert stored == "postgresql://team@db.example:5432/sweeps?sslmode=require" and password == PASSWORD
    assert server.without_password("sqlite:////x/sweeps.db") == ("sqlite:////x/sweeps.db", None)
    monkeypatch.setenv(server.PASSWORD_ENV, PASSWORD)
    assert server.with_env_password(stored) == url
    assert server.with_env_password("postgresql://team:other@h/db") == "postgresql://team:other@h/db"


# ---- Heartbeats: untrusted input ------------------------------------------------------------------------------------


def _beat(**fields: object) -> str:
    record = {"process": 1, "host": "node-b", "pid": 4321, "state": "running", "sent": 1.0, "seq": 1, "sys": {}}
    return json.dumps({**record, **fields})


@pytest.mark.parametrize(
    ("beat", "kept"),
    [
        (_beat(sys=[1, 2]), {}),  # a list: made init raise on process 0
        (_beat(sys={"cpu_percent": "abc", "rss_mb": 7.0}), {"rss_mb": 7.0}),  # a string: dropped process 0's rows
        (_beat(sys={"a": True, "b": None, "c": [1], "d": 1e400, "../x": 1.0, "ok": 2}), {"ok": 2.0}),
        (_beat(sys={f"m{i}": float(i) for i in range(2000)}), {f"m{i}": float(i) for i in range(32)}),
        (_beat(sys="NaN").replace('"NaN"', "NaN"), {}),
    ],
)
def test_a_heartbeats_metrics_keep_only_finite_numbers_under_plain_names(beat: str, kept: dict) -> None:
    from training.runs.beat_check import parse_beat

    record = parse_beat(beat, 2)
    assert record is not None and record["sys"] == kept, record


@pytest.mark.parametrize(
    "beat",
    [
        _beat(message="x" * (8 << 20)),  # an 8 MB failure message: status.json and hosts.json grew to 8 MB
        "[" * 100_000,  # deep JSON
        "not json",
        json.dumps([1, 2]),
        _beat(process=0),  # process 0 is the Hub itself
        _beat(process=2),
        _beat(process="1"),
        _beat(process=True),
        _beat(state="crashed"),  # only process 0 says so
        _beat(state=["running"]),
        12,
    ],
)
def test_a_malformed_or_oversized_heartbeat_is_ignored(beat: object) -> None:
    from training.runs.beat_check import parse_beat

    assert parse_beat(beat, 2) is None


def test_a_heartbeats_text_fields_are_capped_and_typed() -> None:
    from training.runs.beat_check import MAX_MESSAGE, parse_beat

    record = parse_beat(_beat(state="failed", message="y" * 50_000, host="h" * 5000, pid="1", seq=[1], sent="x"), 2)
    assert record["state"] == "failed" and len(record["host"]) == 255
    assert record["message"].startswith("y" * MAX_MESSAGE) and len(record["message"]) < MAX_MESSAGE + 40
    assert (record["pid"], record["seq"], record["sent"]) == (None, None, None)
    assert parse_beat(_beat(message={"a": 1}), 2)["message"] is None


class ServiceStore:
    """JAX's coordination-service key-value store as process 0's Hub reads it: keys and their values."""

    def __init__(self) -> None:
        self.values: dict[str, str] = {}

    def dir_get(self, key: str) -> list[tuple[str, str]]:
        return [(k, v) for k, v in self.values.items() if k.startswith(key)]


def test_process_0s_hub_takes_hostile_heartbeats_without_raising_or_growing_its_files(tmp_path: Path) -> None:
    from training.runs.host_watch import Hub

    kv = ServiceStore()
    kv.values["beat/1"] = _beat(sys=[1, 2])
    kv.values["beat/2"] = _beat(process=1)  # a key that is not its process's
    hub = Hub(tmp_path, kv, 2)
    hub.poll()  # raised AttributeError: init failed on process 0
    assert not [k for k in hub.take_columns() if k.startswith("sys/host1/")]
    kv.values["beat/1"] = _beat(seq=2, sys={"cpu_percent": "abc", "rss_mb": 7.0})
    hub.poll()
    columns = {k: v for k, v in hub.take_columns().items() if k.startswith("sys/host1/")}
    assert columns == {"sys/host1/rss_mb": 7.0}  # "abc" failed the next block of process 0's rows
    kv.values["beat/1"] = _beat(seq=3, state="failed", message="z" * 50_000)
    hub.poll()
    state, message = hub.verdict()
    assert state == "failed" and message.startswith("Host 1 (node-b) failed: zzz") and len(message) < 2100
    assert (tmp_path / run_folder.HOSTS).stat().st_size < 4000
    RunFolder(tmp_path).write_status(state=state, message=message)
    assert (tmp_path / run_folder.STATUS).stat().st_size < 4000


JOB = """
import json, os, sys, time
import jax

i, port = int(sys.argv[1]), sys.argv[2]
jax.distributed.initialize(coordinator_address=f"localhost:{port}", num_processes=2, process_id=i)
jax.devices()  # the backend starts in every process of the job together
from jax._src import distributed

kv = distributed.global_state.client
if i == 1:  # this process sends no heartbeat; the one below is put as anyone reaching the port can
    kv.blocking_key_value_get("test/done", 120_000)
    sys.exit(0)


def hostile(seq, **fields):
    record = {"process": 1, "host": "evil", "pid": 1, "state": "running", "sent": time.time(), "seq": seq, "sys": {}}
    kv.key_value_set("jaxdash/1/beat/1", json.dumps({**record, **fields}), allow_overwrite=True)


import jaxdash

try:
    hostile(1, sys=[1, 2])  # read by init's first poll
    run = jaxdash.init(project="hostile")
    hostile(2, sys={"cpu_percent": "abc", "rss_mb": 7.0})
    for step in range(400):
        run.log({"loss": float(step)})
        if step == 150:
            hostile(3, state="failed", message="x" * (8 << 20))
        if step == 300:
            hostile(4, state="failed", message="y" * 50_000)
        time.sleep(0.005)
    run.finish()
finally:
    kv.key_value_set("test/done", "1")
"""


@pytest.mark.slow  # two processes importing JAX: about ten seconds
def test_process_0_keeps_every_row_under_hostile_heartbeats(tmp_path: Path) -> None:
    from runstore import run_store
    from tests.client_scripts import rows, script_env, write
    from tests.test_multihost import _port

    path, port, procs = write(tmp_path, JOB, "job.py"), str(_port()), []
    for i in range(2):
        env = script_env(tmp_path / f"runs-{i}", JAXDASH_HEARTBEAT_S="0.1", WANDB_MODE="disabled")
        procs.append(subprocess.Popen([sys.executable, str(path), str(i), port], cwd=tmp_path, env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))  # fmt: skip
    try:
        logs = [p.communicate(timeout=180)[0] for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    assert [p.returncode for p in procs] == [0, 0], [log[-3000:] for log in logs]
    (run_dir,) = run_store.run_folders(tmp_path / "runs-0")
    kept = rows(run_dir)
    assert [r["step"] for r in kept if "loss" in r] == list(range(400))
    assert any(r.get("sys/host1/rss_mb") == 7.0 for r in kept) and not any("sys/host1/cpu_percent" in r for r in kept)
    status = RunFolder(run_dir).status()
    assert status["state"] == "failed" and status["message"].startswith("Host 1 (evil) failed: yyy"), status
    assert len(status["message"]) < 2100
    assert (run_dir / run_folder.STATUS).stat().st_size < 8000 and (run_dir / run_folder.HOSTS).stat().st_size < 8000
