"""The client never stops logging for one bad value or one failed write, and keeps every row however a
script ends (issues 35 and 36): real subprocess scripts, read back through the run store."""

from __future__ import annotations

import errno
import json
import signal
import subprocess
from pathlib import Path

import pytest

from runstore import run_folder, run_store
from runstore.run_folder import RunFolder
from tests.client_scripts import only_run, rows, run, start, wandb_history


def test_a_step_or_value_it_cannot_store_is_one_warning_and_logging_goes_on(tmp_path: Path) -> None:
    """step=2**70 ended logging (OverflowError) and failed the run; step=2**63 was stored negative."""
    out, root = run(
        tmp_path,
        """
        import jaxdash as wandb
        run = wandb.init(project="bad", wandb="disabled", tensorboard=False)
        for i in range(100):
            wandb.log({"loss": 1.0 / (i + 1)})
        wandb.log({"loss": 5.0}, step=2**70)
        wandb.log({"loss": 6.0}, step=2**63)
        wandb.log({"huge": 10**400})
        for i in range(100):
            wandb.log({"loss": 0.5})
        wandb.finish()
    """,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    run_dir = only_run(root)
    steps = [r["step"] for r in rows(run_dir)]
    assert steps == list(range(100)) + list(range(101, 201))  # the bad row's step passed; nothing after it lost
    assert all(0 <= s < 2**63 for s in steps)
    assert RunFolder(run_dir).status()["state"] == "finished"
    assert out.stderr.count("past the largest step") == 2 and out.stderr.count("huge:") == 1, out.stderr[-2000:]
    assert "Traceback" not in out.stderr


def test_a_script_that_never_calls_finish_keeps_every_row_everywhere(tmp_path: Path) -> None:
    """W&B finishes at exit; here the run ended "failed" with 0 of 30 rows ("cannot schedule new futures")."""
    out, root = run(
        tmp_path,
        """
        import jaxdash as wandb
        wandb.init(project="no-finish", config={"lr": 0.1})
        for i in range(30):
            wandb.log({"loss": 1.0 / (i + 1)})
    """,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    run_dir = only_run(root)
    status = RunFolder(run_dir).status()
    assert status["state"] == "finished", status
    assert [r["step"] for r in rows(run_dir)] == list(range(30))
    assert [h["_step"] for h in wandb_history(Path(status["wandb"]["dir"]))] == list(range(30))


def test_sigterm_reads_stopped_with_every_row_kept(tmp_path: Path) -> None:
    proc, root = start(
        tmp_path,
        """
        import time
        import jaxdash as wandb
        wandb.init(project="term", wandb="disabled", tensorboard=False)
        for i in range(50):
            wandb.log({"loss": float(i)})
        print("ready", flush=True)
        time.sleep(600)
    """,
    )
    assert proc.stdout.readline().strip() == "ready", proc.stderr.read()[-2000:]
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGTERM, err[-2000:]
    run_dir = only_run(root)
    assert RunFolder(run_dir).status()["state"] == "stopped"
    assert [r["step"] for r in rows(run_dir)] == list(range(50))


def test_an_uncaught_exception_reads_failed_with_every_row_kept(tmp_path: Path) -> None:
    out, root = run(
        tmp_path,
        """
        import jaxdash as wandb
        wandb.init(project="raise", wandb="disabled", tensorboard=False)
        wandb.log({"loss": 1.0})
        wandb.log({"loss": 0.5}, commit=False)
        raise RuntimeError("out of data")
    """,
    )
    assert out.returncode == 1 and "RuntimeError: out of data" in out.stderr
    run_dir = only_run(root)
    status = RunFolder(run_dir).status()
    assert status["state"] == "failed" and status["message"] == "RuntimeError: out of data"
    assert rows(run_dir) == [{"step": 0, "loss": 1.0}, {"step": 1, "loss": 0.5}]


def test_a_config_w_and_b_cannot_store_as_json_is_converted_and_leaves_no_empty_folder(tmp_path: Path) -> None:
    """Values become what W&B stores (str() of unknown objects, lists of small arrays); a config that is
    no mapping at all is refused before any run folder exists."""
    out, root = run(
        tmp_path,
        """
        import numpy as np
        import jaxdash as wandb

        class Model:
            def __str__(self):
                return "Model()"

        wandb.init(project="cfg", wandb="disabled", tensorboard=False,
                   config={"model": Model(), "shape": np.zeros(3), "lr": np.float32(0.5), "dims": (1, 2)})
        wandb.finish()
        try:
            wandb.init(project="cfg2", config=42, wandb="disabled", tensorboard=False)
        except TypeError as exc:
            print("refused:", exc)
    """,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert "refused:" in out.stdout
    run_dir = only_run(root)  # one folder: the refused config made none
    config = run_store.read_json(run_dir / run_folder.CONFIG)["config"]
    assert config == {"model": "Model()", "shape": [0.0, 0.0, 0.0], "lr": 0.5, "dims": [1, 2]}


@pytest.fixture
def small_disk(tmp_path: Path):  # noqa: ANN201 - a generator fixture
    """A 16 MB tmpfs (needs root to mount, as in CI; skipped where mounting is refused)."""
    target = tmp_path / "disk"
    target.mkdir()
    out = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(target)], capture_output=True, text=True
    )
    if out.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {out.stderr.strip()}")
    yield target
    subprocess.run(["umount", str(target)], check=False)


def test_a_full_disk_that_frees_up_again_loses_no_record(tmp_path: Path, small_disk: Path) -> None:
    """60,000 rows; the disk fills up for the middle 20,000, then space returns: every row lands, in order,
    the gap is a status event, and the run reads finished (it read failed with 9,999 rows kept)."""
    code = f"""
        import os, time
        import jaxdash as wandb
        wandb.init(project="full", wandb="disabled", tensorboard=False)
        for i in range(20_000):
            wandb.log({{"loss": i * 0.5}})
        time.sleep(0.5)  # the first third lands
        with open({str(small_disk / "filler")!r}, "wb", buffering=0) as f:  # fill the disk (nothing left to flush at close)
            try:
                while True:
                    f.write(b"x" * 65536)
                    f.flush()
            except OSError as exc:
                assert exc.errno == {errno.ENOSPC}
        for i in range(20_000, 40_000):
            wandb.log({{"loss": i * 0.5}})
            if i % 2_000 == 0:
                time.sleep(0.1)  # writes fail meanwhile
        os.remove({str(small_disk / "filler")!r})
        for i in range(40_000, 60_000):
            wandb.log({{"loss": i * 0.5}})
        wandb.finish()
        print("done", flush=True)
    """
    out, _ = run(tmp_path, code, JAXDASH_RUNS=str(small_disk / "runs"))
    assert out.returncode == 0 and "done" in out.stdout, out.stderr[-3000:]
    run_dir = only_run(small_disk / "runs")
    records = rows(run_dir)
    assert [r["step"] for r in records] == list(range(60_000))
    assert all(r["loss"] == r["step"] * 0.5 for r in records)
    status = RunFolder(run_dir).status()
    assert status["state"] == "finished", status
    gaps = [e for e in status.get("events", []) if e["kind"] == "write_gap"]
    assert len(gaps) == 1 and "No space left on device" in gaps[0]["message"], status.get("events")
    assert gaps[0]["delayed"] > 0 and gaps[0]["lost"] == 0
    assert all(json.loads(line) for line in (run_dir / run_folder.RECORDS).read_bytes().splitlines())


def test_every_run_of_a_script_ends_at_exit(tmp_path: Path) -> None:
    """reinit="create_new" keeps two runs open (wandb.run stays the first); neither calls finish."""
    out, root = run(tmp_path, """
        import jaxdash as wandb
        first = wandb.init(project="a", tensorboard=False)
        second = wandb.init(project="b", reinit="create_new", tensorboard=False)
        assert wandb.run is first and second is not first
        first.log({"x": 1.0})
        second.log({"y": 2.0})
    """, WANDB_MODE="disabled")  # fmt: skip
    assert out.returncode == 0, out.stderr[-2000:]
    found = {run_store.read_run(d).task: d for d in run_store.run_folders(root)}
    assert [RunFolder(found[t]).status()["state"] for t in ("a", "b")] == ["finished", "finished"]
    assert (rows(found["a"]), rows(found["b"])) == ([{"step": 0, "x": 1.0}], [{"step": 0, "y": 2.0}])
