"""The warm worker: a training process with JAX imported, waiting for the page's next Start.

`python -m training worker` imports everything, says "ready", then runs one job read from stdin:
one JSON line {"argv": [...], "log": "path/to/process.log", "env": {...}, "cwd": "..."}, exactly as
the CLI would run it with that environment and working directory. Pressing Start then skips
importing JAX, Flax, Optax and the tracking backends (seconds on a laptop).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

from runstore.env_numbers import env_number_or_default

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
    nice = int(env_number_or_default("JAXDASH_NICE", 0, integer=True, minimum=0))
    if nice and not _niced:
        os.nice(nice)
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


def warm_worker(main: Callable[[list[str]], int]) -> NoReturn:
    """Import, say "ready", rehearse, run one job from stdin with `main`, and end the process with its exit code."""
    import jax

    import runwriters.build  # noqa: F401 - warm import
    import training.engine.loop  # noqa: F401 - warm import
    import training.runs.checkpoint  # noqa: F401 - warm import (Orbax: ~0.2 s)
    import training.tasks.mnist  # noqa: F401 - warm import
    import training.tasks.regression  # noqa: F401 - warm import
    from training.runs import rehearsal

    jax.devices()  # initialise the backend now, not on the first step
    try:
        import tensorboardX  # noqa: F401
        import wandb  # noqa: F401
    except ImportError:
        pass
    print("ready", flush=True)
    rehearsal.rehearse()  # warms this process further; gives way as soon as a job comes
    line = sys.stdin.readline()
    if not line.strip():  # the dashboard shut down without using this worker: nothing to write or flush
        # Leave at once: the rehearsal was abandoned by a signal at any bytecode, and the interpreter's
        # teardown after it could wait for ever on a pool thread it left (seen: a worker held 400 MB
        # for 30 min after its server) or crash (SIGSEGV in 1 of 8 tries).
        sys.stdout.flush()
        os._exit(0)
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
    try:
        code = main(list(job["argv"]))
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1
    except BaseException:  # noqa: BLE001 - said on the job's log, as the interpreter would, then leave below
        traceback.print_exc()
        code = 1
    leave(code)


def leave(code: int) -> NoReturn:
    """End the process once its job's run is written, without the interpreter's teardown: a rehearsal abandoned by
    the job's signal at any bytecode may leave a thread that teardown waits on for ever (seen: a worker alive and
    asleep 120 s after its run had ended, holding its memory and the page's next warm worker). W&B's service and
    the log streams are closed here first."""
    wandb = sys.modules.get("wandb")
    if wandb is not None:
        with contextlib.suppress(Exception):
            wandb.teardown()
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)
