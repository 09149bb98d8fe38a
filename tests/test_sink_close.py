"""A client run's writer process (jaxdash/sink.py) at its close: every row reaches the W&B copy, and a sink that
cannot finish (its cores taken: it runs at idle priority) is stopped with a run event saying what may be missing,
never silently."""

from __future__ import annotations

from pathlib import Path

from runstore.run_folder import RunFolder
from tests import client_scripts

ROWS = 200
LOGGED_PAST_THE_PIPE = 30_000  # rows of 3 keys: ~1 MB sent, past the pipe a stopped sink never empties
FROZEN = """
import os, signal
import jaxdash
from jaxdash import sink

run = jaxdash.init(project="close")
(writer,) = [w for w in run._writer.writers if isinstance(w, sink.SinkWriter)]
os.kill(writer._proc.pid, signal.SIGSTOP)  # as if the cores were never free for it
sink.CLOSE_TIMEOUT_S = 1.0
for step in range(ROWS):
    run.log({"train/loss": 1.0 / (step + 1), **EXTRA})
print("logged", flush=True)
run.finish()
print("done")
"""
AT_ONCE = f"""
import jaxdash
run = jaxdash.init(project="close")
for step in range({ROWS}):
    run.log({{"train/loss": 1.0 / (step + 1)}})
run.finish()
"""


def test_every_row_logged_before_an_immediate_close_is_in_the_wandb_copy(tmp_path: Path) -> None:
    out, root = client_scripts.run(tmp_path, AT_ONCE)
    assert out.returncode == 0, out.stderr[-2000:]
    status = RunFolder(client_scripts.only_run(root)).status()
    history = client_scripts.wandb_history(Path(status["wandb"]["dir"]))
    assert [h["train/loss"] for h in history] == [1.0 / (s + 1) for s in range(ROWS)]
    assert not [e for e in status.get("events", []) if e["kind"] == "write_gap"]


def test_a_sink_stopped_at_close_leaves_a_write_gap_event_and_the_run_store_whole(tmp_path: Path) -> None:
    out, root = client_scripts.run(tmp_path, f"ROWS, EXTRA = {ROWS}, {{}}\n" + FROZEN, WANDB_SILENT="false")
    assert out.returncode == 0 and "done" in out.stdout, out.stderr[-2000:]
    run_dir = client_scripts.only_run(root)
    assert [r["step"] for r in client_scripts.rows(run_dir)] == list(range(ROWS))
    status = RunFolder(run_dir).status()
    (gap,) = [e for e in status.get("events", []) if e["kind"] == "write_gap"]
    assert gap["writer"] == "sink" and "may be missing from TensorBoard and the W&B copy" in gap["message"]
    assert status["state"] == "finished"
    assert out.stderr.count("did not end in 1 s") == 1, out.stderr[-2000:]


def test_a_sink_that_reads_nothing_never_stalls_the_script_logging_past_its_pipe(tmp_path: Path) -> None:
    """More than a pipe holds, logged while the writer process is stopped: the script logs on and ends (the
    pipe is fed without blocking, `jaxdash.pipe_feed`); a blocking write would have stopped it at its first
    full pipe until the timeout."""
    code = f"ROWS, EXTRA = {LOGGED_PAST_THE_PIPE}, {{'train/acc': 0.5, 'lr': 0.001}}\n" + FROZEN
    out, root = client_scripts.run(tmp_path, code, timeout=120, WANDB_SILENT="false")
    assert out.returncode == 0 and "logged" in out.stdout and "done" in out.stdout, out.stderr[-2000:]
    run_dir = client_scripts.only_run(root)
    assert [r["step"] for r in client_scripts.rows(run_dir)] == list(range(LOGGED_PAST_THE_PIPE))
    (gap,) = [e for e in RunFolder(run_dir).status().get("events", []) if e["kind"] == "write_gap"]
    assert gap["writer"] == "sink"
