"""The page's warm worker: a Start goes to a ready worker process with the current environment, and falls
back to a cold start when the worker is dead or does not fit the job."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from dashboard.processes import launcher
from dashboard.processes import warm_workers as worker
from runstore import launch_files, run_folder
from settings.config import parse_config
from tests.apptest_pages import app, dirs, submit_mnist_form, wait_status

# -- warm worker -----------------------------------------------------------------------------------


@pytest.fixture
def warm_pool(monkeypatch: pytest.MonkeyPatch) -> Iterator[worker.WorkerPool]:
    """This test's own worker pool (in place of the module's), its worker ready; killed afterwards."""
    pool = worker.WorkerPool()
    monkeypatch.setattr(worker, "_POOL", pool)
    monkeypatch.delenv("JAXDASH_WARM_WORKER", raising=False)
    pool.ensure()
    assert pool.worker is not None and pool.worker.wait_ready(180), list(pool.worker.output if pool.worker else [])
    yield pool
    waiting = pool.worker
    pool.close()
    assert waiting is None or waiting.proc.poll() is not None  # an unused worker does not outlive the server


def linked_dataset(src: Path, dest: Path) -> Path:
    """A data folder holding `src`'s four IDX files (symlinks)."""
    dest.mkdir(parents=True)
    for f in src.iterdir():
        (dest / f.name).symlink_to(f)
    return dest


def test_start_goes_to_the_warm_worker_with_the_current_environment(
    root: Path, warm_pool: worker.WorkerPool, fashion_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Set after the worker started: the run only finds "mnist" if the job carried the environment over.
    monkeypatch.setenv("JAXDASH_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    linked_dataset(fashion_dir, tmp_path / "data" / "mnist")
    ready_pid = warm_pool.worker.proc.pid  # type: ignore[union-attr]
    at = app()
    at.segmented_control(key="task").set_value("mnist").run()
    assert any("MNIST: found in" in c.value and str(tmp_path / "data") in c.value for c in at.caption)
    submit_mnist_form(at, "warm", epochs=1, train_limit="512", test_limit="256")
    (run_dir,) = dirs(root)
    info = launch_files.launch_info(run_dir)
    assert info["via"] == "worker" and info["pid"] == ready_pid
    status = wait_status(run_dir, ("finished", "failed", "crashed"))
    assert status["state"] == "finished", status
    assert status["pid"] == ready_pid  # the worker became the run's process
    assert '"state": "finished"' in (run_dir / run_folder.LOG).read_text()
    deadline = time.monotonic() + 60  # a replacement starts once the run has written metrics
    while (warm_pool.worker is None or warm_pool.worker.proc.pid == ready_pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert warm_pool.worker is not None and warm_pool.worker.proc.pid != ready_pid


def test_dead_or_mismatched_worker_falls_back_to_a_cold_start(
    root: Path, warm_pool: worker.WorkerPool, monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg = parse_config("regression", {"steps": 50})
    dead = warm_pool.worker
    dead.proc.kill()  # type: ignore[union-attr]
    dead.proc.wait(10)  # type: ignore[union-attr]
    cold = launcher.launch("regression", cfg, wandb_mode="disabled")
    assert launch_files.launch_info(cold)["via"] == "cold"
    assert wait_status(cold, ("finished", "failed", "crashed"))["state"] == "finished"
    fresh = warm_pool.worker
    assert fresh is not None and fresh is not dead and fresh.wait_ready(180)
    # XLA_FLAGS is read when JAX starts, which the waiting worker already did: it cannot take this run.
    monkeypatch.setenv("XLA_FLAGS", "--xla_force_host_platform_device_count=2")
    other = launcher.launch("regression", cfg, wandb_mode="disabled")
    assert launch_files.launch_info(other)["via"] == "cold"
    assert wait_status(other, ("finished", "failed", "crashed"))["state"] == "finished"
    assert fresh.proc.wait(10) is not None  # replaced by a worker started with the new flags
    assert warm_pool.worker is not None and warm_pool.worker.env.get("XLA_FLAGS") == os.environ["XLA_FLAGS"]


def test_worker_fits_only_jobs_it_can_run_as_a_fresh_process() -> None:
    w = object.__new__(worker.Worker)
    w.env = {"JAXDASH_RUNS": "/a", "WANDB_MODE": "offline", "XLA_FLAGS": "-x"}
    assert w.fits({"JAXDASH_RUNS": "/b", "WANDB_MODE": "disabled", "XLA_FLAGS": "-x", "JAXDASH_DATA_DIR": "/d"})
    assert not w.fits({"JAXDASH_RUNS": "/a", "XLA_FLAGS": "-x"})  # WANDB_MODE would stay set in the worker
    assert not w.fits({"JAXDASH_RUNS": "/a", "WANDB_MODE": "offline", "XLA_FLAGS": "-y"})
    assert not w.fits({**w.env, "JAX_PLATFORMS": "cpu"})
    assert worker.job_env({"PATH": "/bin", "WANDB_X": "1", "XLA_FLAGS": "f", "JAXDASH_Y": "2"}) == {
        "WANDB_X": "1",
        "XLA_FLAGS": "f",
        "JAXDASH_Y": "2",
        "JAXDASH_NICE": "10",  # training below the page's priority unless the environment says otherwise
    }


def test_an_idle_dashboard_keeps_no_worker_until_the_page_first_starts_a_run(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A dashboard that only views runs keeps no JAX process (~400 MB); the first Start runs cold and leaves a
    worker behind once its run has settled, which the next Start takes."""
    monkeypatch.setattr(worker, "_POOL", None)  # this server has not launched anything yet
    monkeypatch.delenv("JAXDASH_WARM_WORKER", raising=False)
    monkeypatch.setenv("JAXDASH_REHEARSE", "0")  # the worker only imports: what this test needs of it
    app("views/runs.py")  # the page viewed: app.py's warm_up runs on every page run
    assert worker._POOL is None, "viewing the page started a warm worker"
    cfg = parse_config("regression", {"steps": 50})
    first = launcher.launch("regression", cfg, wandb_mode="disabled")
    pool = worker._POOL
    try:
        assert launch_files.launch_info(first)["via"] == "cold" and pool is not None
        assert wait_status(first, ("finished", "failed", "crashed"))["state"] == "finished"
        deadline = time.monotonic() + worker.REPLACE_DELAY_S + 30  # started once the first run settled
        while pool.worker is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert pool.worker is not None and pool.worker.wait_ready(180), "no worker after the first Start"
        second = launcher.launch("regression", cfg, wandb_mode="disabled")
        assert launch_files.launch_info(second)["via"] == "worker"
        assert wait_status(second, ("finished", "failed", "crashed"))["state"] == "finished"
    finally:
        if pool is not None:
            pool.close()
