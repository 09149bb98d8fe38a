"""The warm worker: a training process with JAX imported, waiting for the page's next Start.

`python -m training worker` imports everything, says "ready", then runs one job read from stdin:
one JSON line {"argv": [...], "log": "path/to/process.log", "env": {...}, "cwd": "..."}, exactly as
the CLI would run it with that environment and working directory. Pressing Start then skips
importing JAX, Flax, Optax and the tracking backends (seconds on a laptop).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path

CPU_THREAD_FLAGS = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
_niced = False


def share_the_machine() -> None:
    """Leave room for the page: one XLA CPU thread and, with $JAXDASH_NICE, a lower CPU priority.

    Must run before JAX starts its backend. Small-batch steps (batch 32, 784-128-128-10) ran as fast
    or faster on one thread than on two here (1,830-1,860 vs 1,390-1,740 steps/s, alternated), and the
    other core stays free for the dashboard. $JAXDASH_XLA_THREADS=all keeps XLA's default threading;
    an $XLA_FLAGS of the user's own is left alone.
    """
    global _niced
    if os.environ.get("JAXDASH_XLA_THREADS", "one") != "all" and "XLA_FLAGS" not in os.environ:
        os.environ["XLA_FLAGS"] = CPU_THREAD_FLAGS
    nice = os.environ.get("JAXDASH_NICE", "").strip()
    if nice.isdigit() and not _niced:
        os.nice(int(nice))
        _niced = True


def enable_compilation_cache() -> None:
    """Keep compiled XLA programs on disk so a run's second start skips compiling (JAX's own cache).

    $JAXDASH_JIT_CACHE=0 turns it off; $JAX_COMPILATION_CACHE_DIR picks the folder.
    """
    if os.environ.get("JAXDASH_JIT_CACHE", "1") == "0":
        return
    import jax

    cache = os.environ.get("JAX_COMPILATION_CACHE_DIR") or str(
        Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "jaxdash" / "jax"
    )
    jax.config.update("jax_compilation_cache_dir", cache)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)


REHEARSAL = {"steps": 20}  # a tiny regression run: every code path of a run, in well under a second
MNIST_REHEARSAL = {"train_limit": 256, "test_limit": 256, "epochs": 1}  # on a dataset found locally


def rehearse() -> None:
    """Train a tiny regression run (and MNIST on a local dataset) into a temporary folder, before "ready".

    Importing is not all of a cold start: a process's first run also traces and lowers its first
    programs, creates the data with op-by-op JAX calls, imports Orbax and opens its writers. Done
    here while the worker waits, a Start's first record comes in ~0.1 s instead of ~0.5 s (measured
    in one process, 0.09-0.10 s vs 0.49-0.57 s). $JAXDASH_REHEARSE=0 skips it; a failure is only logged.
    """
    if os.environ.get("JAXDASH_REHEARSE", "1") == "0":
        return
    import logging
    import shutil
    import tempfile

    from training import data
    from training.run import execute

    local = [name for name in data.DATASET_SIZES if data.find_local(name) is not None]
    jobs = [("regression", REHEARSAL)] + [("mnist", {**MNIST_REHEARSAL, "dataset": name}) for name in local[:1]]
    folder = tempfile.mkdtemp(prefix="jaxdash-rehearsal-")
    logging.disable(logging.WARNING)  # the rehearsal's "not supported" notes are not the real run's
    try:
        for task, cfg in jobs:
            execute(task, [cfg], root=folder, wandb_mode="disabled", console=False)
    except Exception as exc:  # noqa: BLE001 - a rehearsal must never keep the worker from its job
        print(f"warm worker: rehearsal failed ({type(exc).__name__}: {exc}); going on without it", file=sys.stderr)
    finally:
        logging.disable(logging.NOTSET)
        shutil.rmtree(folder, ignore_errors=True)


def warm_worker(main: Callable[[list[str]], int]) -> int:
    """Import, say "ready", run one job from stdin with `main`; returns its exit code."""
    import jax

    import training.engine  # noqa: F401 - warm import
    import training.tasks.mnist  # noqa: F401 - warm import
    import training.tasks.regression  # noqa: F401 - warm import
    import training.writers.build  # noqa: F401 - warm import

    jax.devices()  # initialise the backend now, not on the first step
    try:
        import tensorboardX  # noqa: F401
        import wandb  # noqa: F401
    except ImportError:
        pass
    rehearse()
    print("ready", flush=True)
    line = sys.stdin.readline()
    if not line.strip():
        return 0  # the dashboard shut down without using this worker
    job = json.loads(line)
    os.environ.update(job.get("env") or {})
    share_the_machine()  # the nice level may come with the job (XLA threads were set at the worker's start)
    if job.get("cwd"):
        os.chdir(job["cwd"])
    if job.get("log"):
        fd = os.open(job["log"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.close(fd)
    return main(list(job["argv"]))
