"""A client run's console and system metrics, as W&B's defaults keep them: the same script run with real
`import wandb` (offline) and with `import jaxdash as wandb`, as real subprocesses whose stdout is a pipe (no tty),
side by side; W&B's folders read with its own reader (`wandb leet inspect`, tests/wandb_leet.py).

* console: the script's stdout and stderr (and the traceback of the exception that ends it) in the run folder's
  output.log and in the script's own stdout/stderr (teed, never taken), the W&B copy's output records and
  files/output.log as W&B's own, Run detail's Logs as plain text; none of it with `console="off"`;
* system metrics: the script's own process (its threads, its memory) sampled into the run folder's `sys/*` and
  into the W&B copy's system metrics with W&B's own keys, not the writer process's.
"""

from __future__ import annotations

import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from runstore import run_folder, run_output, wandb_reads
from runstore.run_folder import RunFolder
from runstore.safe_files import UnsafePath
from tests import wandb_leet
from tests.apptest_pages import app
from tests.client_scripts import only_run, rows, script_env, write

LINES = 12
CONSOLE = f"""
import sys
if sys.argv[-1] == "wandb":
    import wandb
else:
    import jaxdash as wandb

run = wandb.init(project="console")
for i in range({LINES}):
    print(f"out {{i}} **not bold** [a link](http://example.invalid/{{i}})")
    print(f"err {{i}}", file=sys.stderr)
    run.log({{"loss": 1.0 / (i + 1)}})
print("no newline", end="")
raise RuntimeError("boom at the end")
"""
TRACEBACK = ["Traceback (most recent call last):", '    raise RuntimeError("boom at the end")',
             "RuntimeError: boom at the end"]  # fmt: skip


def _both(tmp_path: Path, code: str, **env: str) -> dict[str, tuple[subprocess.CompletedProcess, Path]]:
    """One script file run by real wandb and by jaxdash at once, each in a folder of its own:
    {"wandb": (process, W&B's offline run folder), "jaxdash": (process, our run folder)}."""
    script = write(tmp_path, code)

    def one(which: str) -> subprocess.CompletedProcess:
        (where := tmp_path / which).mkdir()
        return subprocess.run([sys.executable, str(script), which], cwd=where, env=script_env(where / "runs", **env),
                              capture_output=True, text=True, timeout=300)  # fmt: skip

    with ThreadPoolExecutor(2) as pool:
        theirs, ours = pool.map(one, ["wandb", "jaxdash"])
    (their_dir,) = (tmp_path / "wandb" / "wandb").glob("offline-run-*")
    return {"wandb": (theirs, their_dir), "jaxdash": (ours, only_run(tmp_path / "jaxdash" / "runs"))}


def _copy(run_dir: Path) -> Path:
    (folder,) = (run_dir / run_folder.WANDB).glob("offline-run-*")
    return folder


def _output_lines(records: list[dict], stream: str) -> list[str]:
    """The lines of one stream's output records, their text joined as written."""
    text = "".join(r["output_raw"].get("line", "") for r in records
                   if r.get("type") == "output_raw" and r["output_raw"].get("output_type") == stream)  # fmt: skip
    return text.splitlines()


@pytest.fixture(scope="module")
def console(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[subprocess.CompletedProcess, Path]]:
    return _both(tmp_path_factory.mktemp("console"), CONSOLE)


def test_the_scripts_output_is_kept_and_still_its_own(console: dict) -> None:
    """output.log holds every line of both streams and the whole traceback; the script's stdout and stderr
    (pipes, no tty) still have every line, and the run failed with the exception's last line."""
    proc, run_dir = console["jaxdash"]
    assert proc.returncode == 1
    outs, errs = [f"out {i} **not bold** [a link](http://example.invalid/{i})" for i in range(LINES)], \
        [f"err {i}" for i in range(LINES)]  # fmt: skip
    assert proc.stdout.splitlines() == [*outs, "no newline"]
    assert [line for line in proc.stderr.splitlines() if not line.startswith("jaxdash:")][:LINES] == errs
    kept = (run_dir / run_output.OUTPUT).read_text().splitlines()
    interleaved = [line for pair in zip(outs, errs, strict=True) for line in pair]
    assert kept[: 2 * LINES + 1] == [*interleaved, "no newline"]  # the open line ends where stderr writes
    assert [line for line in kept if line in TRACEBACK or line.startswith("  File ")][0] == TRACEBACK[0]
    assert TRACEBACK[1] in kept and kept[-1] == TRACEBACK[2]
    status = RunFolder(run_dir).status()
    assert status["state"] == "failed" and status["message"] == "RuntimeError: boom at the end"


def test_the_wandb_copy_has_wandbs_output_records_and_output_log(console: dict) -> None:
    """The copy's output records hold the lines W&B's own run holds, stream by stream, and wandb-core writes the
    same files/output.log from them; the writer process's own output is not among them."""
    _, theirs = console["wandb"]
    _, run_dir = console["jaxdash"]
    ours = _copy(run_dir)
    their_records, our_records = wandb_leet.finished_records(theirs), wandb_leet.finished_records(ours)
    for stream in ("STDOUT", "STDERR"):
        assert _output_lines(our_records, stream) == _output_lines(their_records, stream), stream
    assert len(_output_lines(our_records, "STDOUT")) == LINES + 1
    assert (ours / "files" / run_folder.OUTPUT).read_text() == (theirs / "files" / run_folder.OUTPUT).read_text()


def test_run_detail_shows_the_failed_runs_logs_as_text(console: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    """The Logs panel of a failed run is open and shows the traceback as code: no markdown, no link."""
    _, run_dir = console["jaxdash"]
    monkeypatch.setenv("JAXDASH_RUNS", str(run_dir.parent))
    at = app("views/detail.py", run=run_dir.name)
    (logs,) = [c.value for c in at.code if "boom at the end" in c.value]
    assert "out 0 **not bold** [a link](http://example.invalid/0)" in logs and TRACEBACK[0] in logs
    shown = " ".join(m.value for m in at.markdown) + " ".join(c.value for c in at.caption)
    assert "example.invalid" not in shown and "not bold" not in shown


OFF = """
import sys
import jaxdash as wandb

run = wandb.init(project="quiet", settings=wandb.Settings(console="off") if sys.argv[1] == "settings" else None)
print("a line the run does not keep")
run.log({"loss": 1.0})
run.finish()
"""


@pytest.mark.parametrize("how", ["settings", "JAXDASH_CONSOLE", "WANDB_CONSOLE"])
def test_console_off_keeps_no_output(tmp_path: Path, how: str) -> None:
    """`wandb.Settings(console="off")`, $JAXDASH_CONSOLE=off or W&B's $WANDB_CONSOLE=off: no output.log and no
    output records in the W&B copy; the script's own stdout is untouched."""
    script = write(tmp_path, OFF)
    env = script_env(tmp_path / "runs", **({how: "off"} if how != "settings" else {}))
    proc = subprocess.run([sys.executable, str(script), how], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=180)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["a line the run does not keep"]
    run_dir = only_run(tmp_path / "runs")
    assert rows(run_dir)[0]["loss"] == 1.0 and not run_output.has_output(run_dir)
    records = wandb_leet.finished_records(_copy(run_dir))
    assert not [r for r in records if r.get("type") in ("output_raw", "output")]
    assert not (_copy(run_dir) / "files" / run_folder.OUTPUT).exists()


THREADS, MB = 40, 400
SYSTEM = f"""
import sys, threading, time
if sys.argv[-1] == "wandb":
    import wandb
else:
    import jaxdash as wandb
from runstore.run_folder import RunFolder
from tests import wandb_leet

ballast = b"x" * ({MB} << 20)  # resident: written, not only reserved
done = threading.Event()
for _ in range({THREADS}):
    threading.Thread(target=done.wait, daemon=True).start()
run = wandb.init(project="system")


def sampled() -> bool:
    \"\"\"Whether the run's W&B folder holds two system-metrics records yet (the first has no CPU figure).\"\"\"
    ours = sys.argv[-1] != "wandb"
    folder = (RunFolder(run.dir).status().get("wandb") or {{}}).get("dir") if ours else run.settings.sync_dir
    found = wandb_leet.inspect(folder, "--json") if folder else None
    return bool(found and found.returncode == 0 and found.stdout.count('"type":"stats"') >= 2)


deadline, step = time.monotonic() + 120, 0
while time.monotonic() < deadline and not sampled():
    run.log({{"value": step}})
    step += 1
    time.sleep(0.2)
run.finish()  # its last sample while the threads still wait
done.set()
"""


def test_system_metrics_describe_the_scripts_process(tmp_path: Path) -> None:
    """At W&B's sampling interval (here 0.5 s): the run folder's sys/* hold the script's threads and memory, and
    the W&B copy's system metrics have W&B's own keys and describe the script (its threads, its memory), not
    the writer process."""
    # W&B's own settings, read from its variables: sample every 0.5 s; write the .wandb file every 0.1 s, so the
    # script sees its first system-metrics record at once (W&B flushes every 15 s; jaxdash's copy every 0.1 s)
    both = _both(
        tmp_path,
        SYSTEM,
        WANDB_X_DISABLE_STATS="false",
        WANDB_X_STATS_SAMPLING_INTERVAL="0.5",
        WANDB_X_TRANSACTION_LOG_FLUSH_INTERVAL="0.1",
    )
    for which, (proc, _) in both.items():
        assert proc.returncode == 0, f"{which}: {proc.stderr[-3000:]}"
    _, theirs = both["wandb"]
    _, run_dir = both["jaxdash"]
    samples = [r for r in rows(run_dir) if "sys/threads" in r]
    assert samples, "no system metrics in metrics.jsonl"
    assert all(r["sys/threads"] > THREADS and r["sys/rss_mb"] > MB and r["sys/cpu_percent"] >= 0 for r in samples)
    assert not [k for k in wandb_reads.summary(run_dir) if k.startswith("sys/")]  # W&B's summary has none

    def stats(folder: Path) -> list[dict]:
        return [r["stats"]["item"] for r in wandb_leet.finished_records(folder) if r.get("type") == "stats"]

    their_stats, our_stats = stats(theirs), stats(_copy(run_dir))
    assert their_stats and our_stats
    keys = [set().union(*(set(item) for item in found)) for found in (our_stats, their_stats)]
    assert keys[0] == keys[1] and {"cpu", "proc.cpu.threads", "proc.memory.rssMB"} <= keys[0]  # W&B's monitor
    for item in our_stats:
        assert item["proc.cpu.threads"] > THREADS and item["proc.memory.rssMB"] > MB, item
    history = [r["history"]["item"] for r in wandb_leet.finished_records(_copy(run_dir)) if r.get("type") == "history"]
    assert not any(k.startswith("sys/") for item in history for k in item)  # the copy's history is the script's


def test_output_log_is_bounded_rotated_and_never_follows_a_link(tmp_path: Path) -> None:
    """Past its limit output.log becomes output.log.1 (replacing an older one) and begins again, so the run keeps
    its newest output within twice the limit; the tail reads across both; a link planted at output.log is
    refused in one line naming it and its target is never written."""
    log = run_output.OutputLog(tmp_path, max_bytes=100)
    lines = [f"line {i:03d}\n" for i in range(40)]  # 9 bytes each: 360 bytes, three rotations
    for line in lines:
        log.append(line)
    kept, older = (tmp_path / run_output.OUTPUT).read_text(), (tmp_path / run_output.ROTATED).read_text()
    assert len(kept) <= 100 and len(older) <= 100 and (older + kept).endswith("".join(lines[-15:]))
    assert run_output.tail(tmp_path, 12).splitlines() == [line.strip() for line in lines[-12:]]
    log.append("x" * 500)  # one chunk over the limit keeps its end
    assert (tmp_path / run_output.OUTPUT).read_text() == "x" * 100

    planted = tmp_path / "planted"
    planted.mkdir()
    (target := tmp_path / "theirs.txt").write_text("keep me")
    (planted / run_output.OUTPUT).symlink_to(target)
    with pytest.raises(UnsafePath, match=run_output.OUTPUT):
        run_output.OutputLog(planted).append("to the link\n")
    assert target.read_text() == "keep me" and "keep me" not in (run_output.tail(planted) or "")  # nor read through it


def test_the_pages_change_poll_sees_new_output(tmp_path: Path) -> None:
    """Run detail follows a live run's Logs through the page's change poll: a line appended to output.log
    changes the run's stream signature (dashboard/server/changes_route.py), as a new record does."""
    from dashboard.server import changes_route

    log = run_output.OutputLog(tmp_path)
    log.append("first line\n")
    before = changes_route._stream_stamp(tmp_path)
    log.append("a new line\n")
    assert changes_route._stream_stamp(tmp_path) != before


FORKED = """
import multiprocessing, sys
import jaxdash as wandb

run = wandb.init(project="forked", wandb="disabled", tensorboard=False)
print("the parent's line")
child = multiprocessing.get_context("fork").Process(target=print, args=("a child's line",))
child.start()
child.join()
run.log({"loss": 1.0})
print("the parent's last line")
run.finish()
"""


def test_a_forked_child_neither_repeats_nor_ends_the_run(tmp_path: Path) -> None:
    """A child forked by the script (a data loader) inherits the wrapped streams but not their thread: it keeps
    nothing (W&B's wrap does the same), and its exit neither writes the parent's pending output again nor ends
    the parent's run."""
    script = write(tmp_path, FORKED)
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=script_env(tmp_path / "runs"),
                          capture_output=True, text=True, timeout=180)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    run_dir = only_run(tmp_path / "runs")
    assert (run_dir / run_output.OUTPUT).read_text() == "the parent's line\nthe parent's last line\n"
    assert rows(run_dir) == [{"step": 0, "loss": 1.0}]
    assert RunFolder(run_dir).status()["state"] == "finished"
