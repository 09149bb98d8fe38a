"""The `jaxdash` client in a user's own loop, run as a real subprocess: every step reaches the run
store, TensorBoard (its own reader) and W&B (`wandb leet inspect --json`); status follows the
process (finished, failed with its message, crashed after kill -9, stopped by the page's stop
request); bad values warn and never stop training; `import jaxdash as wandb` works."""

from __future__ import annotations

import contextlib
import json
import os
import resource
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from tensorboard.backend.event_processing import event_accumulator as ea

from runstore import run_folder, run_store
from runstore.run_folder import RunFolder
from tests.test_writers_wandb import history, inspect_records

ROOT = Path(__file__).resolve().parents[1]
LOOP = """
import sys, time
import jax, jax.numpy as jnp
import jaxdash

@jax.jit
def train_step(w, x):
    loss, grad = jax.value_and_grad(lambda w: jnp.mean((w * x - 2.0 * x) ** 2))(w)
    return w - 0.1 * grad, loss

run = jaxdash.init(project="client-test", name="my-loop", config={"lr": 0.1}, total_steps=STEPS, **INIT)
w, x = jnp.zeros(()), jnp.linspace(-1.0, 1.0, 64)
for step in range(STEPS):
    w, loss = train_step(w, x)
    run.log({"train/loss": loss, "params": {"w": w}, **EXTRA})
    if run.should_stop():
        break
    time.sleep(SLEEP)
    AFTER
run.finish()
print("done", flush=True)
"""


def script(
    tmp_path: Path, steps: int, extra: str = "{}", sleep: float = 0.0, after: str = "", init: str = "{}"
) -> Path:
    code = LOOP.replace("STEPS", str(steps)).replace("EXTRA", extra).replace("SLEEP", str(sleep))
    code = code.replace("AFTER", after or "pass").replace("INIT", init)
    path = tmp_path / "loop.py"
    path.write_text(textwrap.dedent(code))
    return path


def start(path: Path, root: Path, wandb: str = "disabled") -> subprocess.Popen:
    """Run the loop script; W&B off unless a test reads its copy back (`wandb="offline"`)."""
    env = {**os.environ, "JAXDASH_RUNS": str(root), "PYTHONPATH": str(ROOT), "WANDB_MODE": wandb}
    return subprocess.Popen(
        [sys.executable, str(path)], cwd=path.parent, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def the_run(root: Path) -> Path:
    (run_dir,) = run_store.run_folders(root)
    return run_dir


def wait_for_records(run_dir_root: Path, count: int, proc: subprocess.Popen, timeout: float = 120) -> Path:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        dirs = run_store.run_folders(run_dir_root)
        if dirs and len(RunFolder(dirs[0]).records()[0]) >= count:
            return dirs[0]
        time.sleep(0.1)
    raise AssertionError(f"no {count} records; stderr: {proc.stderr.read()[-2000:] if proc.poll() is not None else ''}")


def test_every_step_reaches_the_store_tensorboard_and_wandb(tmp_path: Path, runs_root: Path) -> None:
    proc = start(script(tmp_path, 10_000), runs_root, wandb="offline")
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0 and "done" in out, err[-3000:]
    run_dir = the_run(runs_root)
    status = RunFolder(run_dir).status()
    assert status["state"] == "finished" and status["step"] == 9_999
    records = RunFolder(run_dir).records()[0]
    assert [r["step"] for r in records] == list(range(10_000))
    assert (
        records[-1]["train/loss"] < records[0]["train/loss"] and "params.w" in records[-1]
    )  # W&B names nested keys "a.b"
    acc = ea.EventAccumulator(status["tensorboard"]["logdir"], size_guidance={ea.SCALARS: 0})
    acc.Reload()
    assert [e.step for e in acc.Scalars("train/loss")] == list(range(10_000))
    rows = [h for h in history(inspect_records(Path(status["wandb"]["dir"]))) if "train/loss" in h]
    assert sorted(int(h["_step"]) for h in rows) == list(range(10_000))  # W&B's own step, no global_step
    config = run_store.read_json(run_dir / run_folder.CONFIG)
    assert config["task"] == "client-test" and config["name"] == "my-loop" and config["config"] == {"lr": 0.1}


def test_kill_9_reads_crashed(tmp_path: Path, runs_root: Path) -> None:
    proc = start(script(tmp_path, 100_000, sleep=0.001), runs_root)
    run_dir = wait_for_records(runs_root, 50, proc)
    proc.send_signal(signal.SIGKILL)
    proc.wait(30)
    assert RunFolder(run_dir).status()["state"] == "crashed"
    steps = [r["step"] for r in RunFolder(run_dir).records()[0]]
    assert steps == list(range(len(steps)))  # nothing logged before the kill is lost or torn


def test_an_exception_reads_failed_with_its_message(tmp_path: Path, runs_root: Path) -> None:
    after = "if step == 20: raise ValueError('the data ran out at step 20')"
    proc = start(script(tmp_path, 1_000, after=after), runs_root)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 1 and "ValueError" in err  # the user's own traceback is still printed
    status = RunFolder(the_run(runs_root)).status()
    assert status["state"] == "failed" and status["message"] == "ValueError: the data ran out at step 20"
    assert len(RunFolder(the_run(runs_root)).records()[0]) == 21


def test_the_pages_stop_request_ends_the_loop(tmp_path: Path, runs_root: Path) -> None:
    proc = start(script(tmp_path, 1_000_000, sleep=0.001), runs_root)
    run_dir = wait_for_records(runs_root, 20, proc)
    RunFolder(run_dir).request_stop()  # what the page's Stop button does
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0 and "done" in out, err[-2000:]
    assert RunFolder(run_dir).status()["state"] == "stopped"


def test_bad_values_warn_once_and_training_goes_on(tmp_path: Path, runs_root: Path) -> None:
    extra = "{'note': 'text', 'nan': float('nan'), 'vec': jnp.ones(3), 'none': None}"
    after = "run.log({'train/loss': 1.0}, step=0)"  # a step that goes backwards
    proc = start(script(tmp_path, 50, extra=extra, after=after), runs_root)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0 and "done" in out, err[-2000:]
    assert err.count("none: NoneType is no metric") == 1 and "note" not in err  # strings are kept (#35): texts
    assert "before the last logged step" in err and "nan: nan logged" in err
    records = RunFolder(the_run(runs_root)).records()[0]
    assert [r["step"] for r in records] == list(range(50)) and all(r["nan"] == "nan" for r in records)
    texts = (the_run(runs_root) / run_folder.ARTIFACTS / run_folder.TEXTS / "note.jsonl").read_text().splitlines()
    assert [json.loads(t)["text"] for t in texts] == ["text"] * 50


def test_a_wandb_script_switches_with_one_line(tmp_path: Path, runs_root: Path) -> None:
    path = tmp_path / "wandb_style.py"
    path.write_text(
        "import jaxdash as wandb\n"
        "wandb.init(project='switch', config={'lr': 0.01})\n"
        "for i in range(30):\n"
        "    wandb.log({'loss': 1.0 / (i + 1), 'lr': wandb.config['lr']})\n"
        "wandb.finish()\n"
    )
    proc = start(path, runs_root)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err[-2000:]
    records = RunFolder(the_run(runs_root)).records()[0]
    assert [r["step"] for r in records] == list(range(30)) and records[-1]["lr"] == pytest.approx(0.01)


def test_resume_allow_continues_the_runs_steps(tmp_path: Path, runs_root: Path) -> None:
    init = "{'id': 'my-run-1', 'resume': 'allow', 'wandb': 'disabled'}"
    for _ in range(2):
        proc = start(script(tmp_path, 25, init=init), runs_root)
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err[-2000:]
    records = RunFolder(runs_root / "my-run-1").records()[0]
    assert [r["step"] for r in records] == list(range(50))
    assert RunFolder(runs_root / "my-run-1").status()["resumed_from"] == 24


def test_the_writer_process_runs_at_idle_priority_with_its_own_wandb_service(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """TensorBoard and W&B work only where a core would idle (SCHED_IDLE), and a script's own W&B
    service (WANDB_SERVICE, set by its `wandb.init`) at normal priority is not shared with it; the
    run's project reaches the writer process without being set in the script's own environment."""
    import jaxdash
    from jaxdash.sink import SinkWriter

    monkeypatch.setenv("WANDB_SERVICE", "2-1-unix-/nonexistent.sock")
    monkeypatch.delenv("WANDB_PROJECT", raising=False)
    monkeypatch.delenv("WANDB_ERROR_REPORTING", raising=False)
    run = jaxdash.init(project="priority", runs_root=tmp_path, wandb="disabled", tensorboard=True)
    try:
        (sink,) = [w for w in run._writer.writers if isinstance(w, SinkWriter)]
        pid = sink._proc.pid
        deadline = time.monotonic() + 30
        while not sink._heard_at and time.monotonic() < deadline:  # its first line: its writers are open
            time.sleep(0.05)  # (/proc/PID/environ reads empty until its exec has set the environment up)
        assert os.sched_getscheduler(pid) == os.SCHED_IDLE  # set by this process right after starting it
        environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        assert not any(e.startswith(b"WANDB_SERVICE=") for e in environ)
        assert b"WANDB_PROJECT=priority" in environ and "WANDB_PROJECT" not in os.environ  # the script's env untouched
        assert b"WANDB_ERROR_REPORTING=false" in environ  # wandb's per-call telemetry: half of a log call
        run.log({"loss": 1.0})
    finally:
        run.finish()
    assert RunFolder(run.dir).status()["state"] == "finished"


def test_a_writer_process_leaves_idle_priority_when_its_run_ends(tmp_path: Path) -> None:
    """At a run's end the writer process and its W&B service finish at normal priority: on cores other processes
    keep busy a SCHED_IDLE process is not scheduled at all, and the copy would wait out CLOSE_TIMEOUT_S and lose
    its last rows. Where the system forbids leaving SCHED_IDLE (unprivileged, RLIMIT_NICE 0) they stay idle."""
    from jaxdash.sink import normal_priority

    code = (
        "import os, subprocess, sys, threading\n"
        "os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))\n"
        "threading.Thread(target=sys.stdin.read, daemon=True).start()\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import sys; sys.stdin.read()'], stdin=subprocess.PIPE)\n"
        "print(child.pid, flush=True)\n"
        "sys.stdin.read()\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        grandchild = int(proc.stdout.readline())
        tasks = [(pid, int(t)) for pid in (proc.pid, grandchild) for t in os.listdir(f"/proc/{pid}/task")]
        assert len(tasks) >= 3 and {os.sched_getscheduler(t) for _, t in tasks} == {os.SCHED_IDLE}  # inherited
        normal_priority(proc.pid)
        policies = {os.sched_getscheduler(t) for _, t in tasks}
        allowed = os.geteuid() == 0 or resource.getrlimit(resource.RLIMIT_NICE)[0] >= 20  # nice 0 allowed
        assert policies == ({os.SCHED_OTHER} if allowed else {os.SCHED_IDLE})
    finally:
        proc.kill()
        proc.wait(10)
        with contextlib.suppress(ProcessLookupError, NameError):
            os.kill(grandchild, signal.SIGKILL)
