"""`--coordinator HOST:PORT --num-processes N --process-id I`: the CLI joins a `jax.distributed` job by flags.

The flags are JAX_COORDINATOR_ADDRESS / JAX_NUM_PROCESSES / JAX_PROCESS_ID's; a flag wins over its
variable, and a bad value is one line naming the flag (or variable) and the fix. The job itself:
real processes on localhost (2 x 4 forced CPU devices), a real coordinator, real Fashion-MNIST.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from training.engine import distributed
from training.engine.distributed import JobFlags, resolve

JOB_ENV = distributed.ENV


@pytest.fixture
def no_job_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """No JAX_* job variables, and `main` leaves this process's XLA settings and compilation cache alone."""
    for var in JOB_ENV:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("JAXDASH_XLA_THREADS", "all")
    monkeypatch.setenv("JAXDASH_JIT_CACHE", "0")
    return monkeypatch


def test_flags_win_over_the_variables(no_job_env: pytest.MonkeyPatch) -> None:
    no_job_env.setenv("JAX_COORDINATOR_ADDRESS", "elsewhere:1")
    no_job_env.setenv("JAX_NUM_PROCESSES", "three")  # bad, but the flag replaces it
    no_job_env.setenv("JAX_PROCESS_ID", "7")
    assert resolve("node0:8476", "2", "1") == JobFlags("node0:8476", 2, 1)
    assert resolve(None, "8", "7") == JobFlags("elsewhere:1", 8, 7)  # the variable where no flag is given
    no_job_env.setenv("JAX_NUM_PROCESSES", "2")
    no_job_env.setenv("JAX_PROCESS_ID", "1")
    assert resolve() == JobFlags("elsewhere:1", 2, 1)


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--num-processes", "two"], "--num-processes 'two' is not a whole number; give the job's process count"),
        (
            ["--coordinator", "localhost:9", "--num-processes", "2", "--process-id", "2"],
            "--process-id 2 is outside 0..1",
        ),
        (["--num-processes", "2", "--process-id", "1"], "--num-processes 2 needs --coordinator HOST:PORT"),
        (["--coordinator", "node0", "--num-processes", "2"], "--coordinator 'node0' is not HOST:PORT"),
        (["--num-processes", "0"], "--num-processes 0: a job has at least one process"),
    ],
)
def test_a_bad_job_flag_is_one_line_naming_it(
    flags: list[str], message: str, no_job_env: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    from training.__main__ import main

    for argv in (["regression", "--steps", "5", "--runs-root", str(tmp_path)], ["resume", str(tmp_path / "r")]):
        assert main([*argv, *flags]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"error: {message}") and err.count("\n") == 1, err
    assert not any(tmp_path.iterdir())  # refused before anything was made


def test_a_bad_job_variable_is_named(
    no_job_env: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    from training.__main__ import main

    no_job_env.setenv("JAX_COORDINATOR_ADDRESS", "localhost:9")
    no_job_env.setenv("JAX_NUM_PROCESSES", "2")
    no_job_env.setenv("JAX_PROCESS_ID", "-1")
    assert main(["regression", "--steps", "5", "--runs-root", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert (
        err
        == "error: $JAX_PROCESS_ID -1 is outside 0..1 ($JAX_NUM_PROCESSES 2); give each process its own id from 0 to 1.\n"
    )
