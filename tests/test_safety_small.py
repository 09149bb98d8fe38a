"""Small hostile inputs, each one line instead of a traceback: a 5,000-deep config, a number variable set to
"²", a full disk while a checkpoint saves. Real scripts and the real CLI in subprocesses, TensorStore itself."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from runstore import run_folder
from runstore.env_numbers import EnvNumberError, env_number
from tests.client_scripts import only_run, run

REPO = Path(__file__).resolve().parents[1]


def test_a_5000_deep_config_is_kept_to_32_levels_with_one_warning(tmp_path: Path) -> None:
    """It raised RecursionError in `jaxdash.init`."""
    out, root = run(
        tmp_path,
        """
        import jaxdash

        config = leaf = {}
        for _ in range(5000):
            leaf["a"] = leaf = {}
        run = jaxdash.init(project="deep", config={"lr": 0.1, "deep": config})
        run.config.update({"later": config})
        run.log({"x": 1.0})
        run.finish()
        """,
        WANDB_MODE="disabled",
    )
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr[-3000:]
    warned = [line for line in out.stderr.splitlines() if "nested deeper than 32 levels" in line]
    assert len(warned) == 1, out.stderr  # once, not per value
    saved = json.loads((only_run(root) / run_folder.CONFIG).read_text())["config"]
    assert saved["lr"] == 0.1
    node, levels = saved["deep"], 0
    while isinstance(node, dict):
        node, levels = node["a"], levels + 1
    assert (levels, node) == (32, "...")  # 32 levels of dicts kept, the rest one "..."


@pytest.mark.parametrize("raw", ["²", "٣", "abc", "1.5", "nan", "0", "-2", ""])
def test_a_bad_whole_number_names_its_variable_and_what_it_accepts(raw: str, monkeypatch) -> None:
    """`JAXDASH_SCAN_UNROLL=²` passed `str.isdigit()` and failed in int(): "invalid literal for int()"."""
    from training.engine.chunks import UNROLL_ENV, scan_unroll

    monkeypatch.setenv(UNROLL_ENV, raw)
    if raw == "":
        assert scan_unroll() == 1
        return
    with pytest.raises(EnvNumberError) as bad:
        scan_unroll()
    assert str(bad.value) == f"$JAXDASH_SCAN_UNROLL={raw!r}: give a positive whole number, or unset it (default 1)"


@pytest.mark.parametrize("raw", ["inf", "1e400", "²", "0x10", "1,5"])
def test_a_bad_number_of_seconds_is_refused(raw: str, monkeypatch) -> None:
    monkeypatch.setenv("EXAMPLE_WAIT_S", raw)
    with pytest.raises(EnvNumberError, match=r"^\$EXAMPLE_WAIT_S=.*: give a number >= 0, or unset it \(default 30\)$"):
        env_number("EXAMPLE_WAIT_S", 30.0, minimum=0)
    monkeypatch.setenv("EXAMPLE_WAIT_S", " 2.5 ")
    assert env_number("EXAMPLE_WAIT_S", 30.0, minimum=0) == 2.5


def test_a_bad_scan_unroll_ends_the_cli_run_with_one_line(tmp_path: Path) -> None:
    cmd = [sys.executable, "-m", "training", "regression", "--steps", "20", "--log-every", "10", "--quiet"]
    cmd += ["--wandb", "disabled", "--no-tensorboard", "--runs-root", str(tmp_path)]
    env = {**os.environ, "JAXDASH_SCAN_UNROLL": "²", "WANDB_MODE": "disabled"}
    out = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr[-3000:]
    (run_dir,) = tmp_path.iterdir()
    expected = "$JAXDASH_SCAN_UNROLL='²': give a positive whole number, or unset it (default 1)"
    assert out.stderr.strip().splitlines() == [f"error: {run_dir.name}: {expected}"], out.stderr
    assert not (run_dir / "error.log").exists()  # a bad setting, not a bug: no traceback kept either


@pytest.mark.parametrize(
    ("variable", "default", "argv"),
    [
        ("JAXDASH_NICE", "0", ["-m", "training", "tasks"]),  # int("²") raised in every CLI start
        ("JAXDASH_SWEEP_GRACE_S", "20", ["-c", "import settings.sweep.study"]),  # raised at import
    ],
)
def test_a_bad_number_read_at_start_is_one_warning_and_the_default(variable: str, default: str, argv: list) -> None:
    env = {**os.environ, variable: "²"}
    out = subprocess.run([sys.executable, *argv], cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr[-3000:]
    accepts = "a positive whole number" if variable == "JAXDASH_SWEEP_GRACE_S" else "a whole number"
    accepts += " >= 0" if variable == "JAXDASH_NICE" else ""
    line = f"jaxdash: ${variable}='²': give {accepts}, or unset it (default {default}); using {default}"
    assert out.stderr.strip().splitlines() == [line], out.stderr


def test_writes_that_end_after_a_failed_checkpoint_print_no_traceback(tmp_path: Path) -> None:
    """A full disk during an Orbax save printed four "RuntimeError: Event loop is closed" tracebacks: TensorStore
    resolving the other writes' futures on the event loop Orbax had closed. Here TensorStore does that itself;
    any other unraisable error is still printed."""
    script = tmp_path / "late.py"
    script.write_text(
        "import asyncio, tensorstore as ts\n"
        "import training.runs.checkpoint\n"
        "promise, future = ts.Promise.new()\n"
        "loop = asyncio.new_event_loop()\n"
        "async def wait():\n"
        "    return await future\n"
        "task = loop.create_task(wait())\n"
        "loop.run_until_complete(asyncio.sleep(0.01))\n"
        "loop.close()\n"
        "promise.set_result(1)  # the write ends after its loop closed\n"
        "class Other:\n"
        "    def __del__(self):\n"
        "        raise KeyError('still reported')\n"
        "Other()\n"
        "print('done', flush=True)\n"
        "import os; os._exit(0)  # not the pending task's own warning at exit\n"
    )
    out = subprocess.run([sys.executable, str(script)], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout == "done\n", out.stderr[-3000:]
    assert "Event loop is closed" not in out.stderr, out.stderr
    assert out.stderr.count("Traceback") == 1 and "KeyError: 'still reported'" in out.stderr, out.stderr


def test_a_full_disk_at_a_checkpoint_names_the_checkpoint_not_an_earlier_write(tmp_path: Path) -> None:
    """The save's error (TensorStore's text) was raised while an image write's OSError was handled, and the
    run's message named the image: "Saving the checkpoint failed: No space left ... writing .../fit__plot.png"."""
    from training.runs.lifecycle import describe_error

    run_dir = tmp_path / "run"
    image = OSError(
        errno.ENOSPC,
        os.strerror(errno.ENOSPC),
        str(run_dir / run_folder.artifacts_rel(run_folder.IMAGES, "fit__plot.png")),
    )
    saving = ValueError(  # TensorStore's error as Orbax raised it
        'RESOURCE_EXHAUSTED: Error opening "zarr" driver: Error writing "shuffle_key/.zarray" in OCDBT '
        f'database at local file "{run_dir}/ckpt/200.orbax-checkpoint-tmp/arrays.orbax-checkpoint-tmp/'
        f'ocdbt.process_0/": Failed writing: "{run_dir}/ckpt/200.orbax-checkpoint-tmp/x": '
        "No space left on device [source locations='tensorstore/internal/os/file_util_posix.cc:229']"
    )
    caught: list[BaseException] = []
    try:
        try:
            raise image
        except OSError:  # the engine's handler of the failed write, which then closes the checkpointer
            raise saving  # noqa: B904 - its context is the write's error, as in the engine
    except ValueError as exc:
        caught.append(exc)
    assert caught[0].__context__ is image
    message = describe_error(caught[0])
    assert message == f"No space left on device writing {run_dir}/ckpt/200. Free some space, then resume the run."
