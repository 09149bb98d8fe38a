"""The run queue: at most N processes at once, positions, cancelling, and `--queue` on the CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from runstore import run_folder
from runstore.run_folder import RunFolder
from settings.queue.store import Queue, default_limit


def test_limit_positions_and_cancel(tmp_path: Path) -> None:
    q = Queue(tmp_path)
    q.set_limit(1)
    jobs = [q.submit(["tasks"], label=f"job {i}") for i in range(3)]
    assert q.dispatch() == [jobs[0]]  # one slot: only the oldest starts
    listed = {j["id"]: j for j in q.jobs()}
    assert listed[jobs[0]]["state"] == "running"
    assert (listed[jobs[1]]["position"], listed[jobs[2]]["position"]) == (1, 2)
    assert q.cancel(jobs[2]) and not q.cancel(jobs[0])  # a running job is not cancelled from the queue
    assert q.wait(jobs[1], timeout=120) == "ended"
    listed = {j["id"]: j for j in q.jobs()}
    assert [listed[j]["state"] for j in jobs] == ["ended", "ended", "cancelled"]
    assert listed[jobs[0]]["started"] and listed[jobs[1]]["started"] >= listed[jobs[0]]["ended"] - 1
    assert "usage: python -m training" in q.log_path(jobs[1]).read_text()
    assert not q.log_path(jobs[2]).exists()  # the cancelled job never ran
    assert listed[jobs[1]]["rc"] == 0


def test_never_more_than_the_limit_run(tmp_path: Path) -> None:
    q = Queue(tmp_path)
    q.set_limit(2)
    jobs = [q.submit(["tasks"]) for _ in range(5)]
    peak = 0
    deadline = time.monotonic() + 180
    while any(q.state(j) != "ended" for j in jobs) and time.monotonic() < deadline:
        q.dispatch()
        peak = max(peak, sum(j["state"] == "running" for j in q.jobs()))
        time.sleep(0.05)
    assert all(q.state(j) == "ended" for j in jobs) and peak == 2


def test_default_limit_and_bad_limit(tmp_path: Path) -> None:
    assert 1 <= default_limit() <= 1024
    q = Queue(tmp_path)
    assert q.limit() == default_limit()
    try:
        q.set_limit(0)
    except ValueError as exc:
        assert "limit must be >= 1" in str(exc)
    else:
        raise AssertionError("a limit of 0 was accepted")


def test_cli_queue_runs_the_run_through_the_queue(tmp_path: Path) -> None:
    argv = ["regression", "--steps", "20", "--log-every", "10", "--quiet", "--wandb", "disabled"]
    proc = subprocess.run(
        [sys.executable, "-m", "training", *argv, "--no-tensorboard", "--runs-root", str(tmp_path), "--queue"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "queued as job 1 (position 1)" in proc.stderr
    assert '"state": "finished"' in proc.stdout  # the run's own report line, relayed
    (job,) = Queue(tmp_path).jobs()
    assert job["state"] == "ended" and job["rc"] == 0 and "--queue" not in job["argv"]


def test_page_starts_wait_in_the_queue_show_their_place_start_in_turn_and_cancel(tmp_path: Path, monkeypatch) -> None:
    """With one slot, the page's second and third Start wait as queued (#1, #2); Cancel takes one out; the
    server's dispatcher starts the other when the first run ends, into its own run folder."""
    from dashboard.processes import launch_status, launcher
    from settings.fields import parse_config
    from tests.apptest_pages import app
    from training.tasks import load_task

    monkeypatch.setenv("JAXDASH_RUNS", str(tmp_path))
    monkeypatch.setenv("JAXDASH_WARM_WORKER", "0")
    Queue(tmp_path).set_limit(1)
    cfg = parse_config(load_task("regression").Config, {"steps": 400, "log_every": 100})
    first, second, third = (launcher.launch("regression", cfg, wandb_mode="disabled") for _ in range(3))
    infos = [json.loads((d / run_folder.LAUNCH).read_text()) for d in (first, second, third)]
    assert "pid" in infos[0] and infos[0]["queue_job"] == 1
    assert [i["via"] for i in infos[1:]] == ["queue", "queue"] and not any("pid" in i for i in infos[1:])
    assert [launch_status.run_status(d).get("position") for d in (second, third)] == [1, 2]

    at = app("views/live.py", run=third.name)
    assert any("Queued: #2 in the run queue" in i.value for i in at.info)
    at.button(key="stop_run").click().run()  # labelled Cancel while it waits
    assert Queue(tmp_path).state(infos[2]["queue_job"]) == "cancelled"
    assert launch_status.run_status(third)["state"] == "stopped"
    assert "Cancelled while it waited" in launch_status.run_status(third)["message"]

    deadline = time.monotonic() + 240
    while launch_status.run_status(second).get("state") not in ("finished", "failed") and time.monotonic() < deadline:
        time.sleep(0.5)
    done = [RunFolder(d).status() for d in (first, second)]
    assert [s.get("state") for s in done] == ["finished", "finished"], (second / run_folder.LOG).read_text()[-2000:]
    assert done[1]["started"] >= done[0]["ended"] - 1  # one slot: the second began after the first ended
    assert not (third / run_folder.CONFIG).exists()  # cancelled: it never ran


def test_the_limit_is_set_from_the_cli_and_the_page(tmp_path: Path, monkeypatch) -> None:
    """`--queue-limit N` and the Sweeps page's number field both set the limit every later start obeys."""
    from streamlit.testing.v1 import AppTest

    argv = ["regression", "--steps", "20", "--quiet", "--wandb", "disabled", "--no-tensorboard"]
    cmd = [sys.executable, "-m", "training", *argv, "--runs-root", str(tmp_path), "--queue-limit", "3"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert Queue(tmp_path).limit() == 3
    (job,) = Queue(tmp_path).jobs()
    assert job["rc"] == 0 and not any(a.startswith("--queue") for a in job["argv"])
    bad = subprocess.run([*cmd[:-1], "0"], capture_output=True, text=True, timeout=300)
    assert bad.returncode == 2 and "--queue-limit must be at least 1 (got 0)" in bad.stderr
    assert "Traceback" not in bad.stderr and Queue(tmp_path).limit() == 3

    monkeypatch.setenv("JAXDASH_RUNS", str(tmp_path))
    at = AppTest.from_file(str(Path(__file__).parents[1] / "dashboard" / "views" / "sweep.py"), default_timeout=60)
    at.run()
    assert at.number_input(key="queue_limit").value == 3
    at.number_input(key="queue_limit").set_value(5).run()
    assert not at.exception and Queue(tmp_path).limit() == 5
    assert any("at most 5 training processes at once" in c.value for c in at.caption)


def test_a_job_never_writes_its_output_outside_the_runs_root(tmp_path: Path) -> None:
    """A queue.db from elsewhere naming a log outside the runs root (directly or through a link) gets the
    job's own log under .queue/ instead."""
    root, outside = tmp_path / "runs", tmp_path / "outside"
    outside.mkdir()
    (root / "link").mkdir(parents=True)
    (root / "link" / run_folder.LOG).symlink_to(outside / "victim")
    q = Queue(root)
    q.set_limit(3)
    far = q.submit(["tasks"], log=outside / "victim")
    linked = q.submit(["tasks"], log=root / "link" / run_folder.LOG)
    ours = q.submit(["tasks"], log=root / "run-a" / run_folder.LOG)
    seen: dict[int, Path] = {}
    q.dispatch(lambda job, argv, log: seen.setdefault(job, log) and os.getpid())
    assert seen == {far: q.log_path(far), linked: q.log_path(linked), ours: root / "run-a" / run_folder.LOG}
    assert not (outside / "victim").exists()


def _crafted_queue(root: Path, argv: list[str]) -> None:
    """A queue.db as someone else could leave it in a runs root: a queued job with no signature."""
    import sqlite3

    Queue(root)  # the schema, as any queue.db has it
    with sqlite3.connect(root / "queue.db") as db:
        db.execute("insert into jobs (argv, label, created) values (?, 'x', 0)", (json.dumps(argv),))


def test_a_queue_db_from_elsewhere_runs_nothing(tmp_path: Path, monkeypatch) -> None:
    """Jobs are commands, so only rows signed with this user's key run: a crafted row, a row signed
    with another account's key and a damaged row are refused, named on the Sweeps page, and the
    dashboard's start-up dispatch starts none of them. This user's own jobs still start."""
    from streamlit.testing.v1 import AppTest

    root, evil = tmp_path / "runs", tmp_path / "evil"
    argv = ["regression", "--steps", "5", "--quiet", "--runs-root", str(evil)]
    monkeypatch.setenv("JAXDASH_CONFIG_DIR", str(tmp_path / "other-user"))
    copied = Queue(root).submit(argv)  # signed, but with another account's key
    monkeypatch.setenv("JAXDASH_CONFIG_DIR", str(tmp_path / "me"))
    _crafted_queue(root, argv)
    monkeypatch.setenv("JAXDASH_RUNS", str(root))
    at = AppTest.from_file(str(Path(__file__).parents[1] / "dashboard" / "app.py"), default_timeout=60)
    at.run()  # the page's start-up resumes the queue
    assert not at.exception
    jobs = Queue(root).jobs()
    assert [(j["id"], j["state"], j["pid"]) for j in jobs] == [(copied, "refused", None), (copied + 1, "refused", None)]
    assert all(f"not signed by this user's queue key ({tmp_path / 'me' / 'queue.key'})" in j["reason"] for j in jobs)
    time.sleep(2)
    assert not evil.exists()  # nothing trained

    with __import__("sqlite3").connect(root / "queue.db") as db:  # damaged argv: refused, no traceback
        db.execute("insert into jobs (argv, label, created) values ('{not json', 'x', 0)")
    mine = Queue(root).submit(["tasks"])
    started = Queue(root).dispatch(lambda job, argv, log: os.getpid())
    assert started == [mine] and Queue(root).state(mine - 1) == "refused"
    sweeps = AppTest.from_file(str(Path(__file__).parents[1] / "dashboard" / "views" / "sweep.py"), default_timeout=60)
    sweeps.run()
    assert not sweeps.exception
    assert sum("The run queue refused job" in w.value for w in sweeps.warning) == 3
    from dashboard.processes import page_queue

    status = page_queue.queue_status({"queue_job": copied, "launched": 1.0})  # a page start's Live line
    assert status["state"] == "failed" and status["message"].startswith(f"The run queue refused job {copied} is not")
