"""`python -m training TASK ... --queue`: the run waits in the queue for a free slot, then trains."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

from runstore import run_store, safe_files
from settings.queue.store import Queue


def without_queue_flags(argv: list[str]) -> list[str]:
    """`argv` without --queue and --queue-limit N (the job itself trains; the limit is the queue's)."""
    kept, skip = [], False
    for a in argv:
        if skip:
            skip = False
        elif a == "--queue-limit":
            skip = True
        elif a != "--queue" and not a.startswith("--queue-limit="):
            kept.append(a)
    return kept


def set_queue_limit(root: Path | None, limit: int) -> str | None:
    """Keep `limit` as the queue's limit in this runs root (queue.db); why not, naming the flag, or None."""
    if limit < 1:
        return f"--queue-limit must be at least 1 (got {limit}): how many training processes may run at once."
    try:
        Queue(run_store.runs_root(root)).set_limit(limit)
    except OSError as exc:
        return f"--queue-limit: the run queue cannot be used: {exc}"
    print(f"queue limit: at most {limit} training processes at once in this runs root", file=sys.stderr)
    return None


def run_queued(task: str, argv: list[str], root: Path | None) -> int:
    """Submit the same command without --queue (or --queue-limit), wait for it, print its output; its exit code.

    A queue that cannot be used (a damaged, read-only, locked or linked queue.db, a refused queue key)
    is one line on stderr and exit code 1.
    """
    try:
        return _run_queued(task, argv, root)
    except OSError as exc:  # QueueError, KeyRefused, UnsafePath: one line naming the file and the fix
        print(f"error: the run queue cannot be used: {exc}", file=sys.stderr)
        return 1


def _run_queued(task: str, argv: list[str], root: Path | None) -> int:
    queue = Queue(run_store.runs_root(root))
    job = queue.submit([task, *without_queue_flags(argv)], label=task)
    queued = next((j for j in queue.jobs() if j["id"] == job), {})
    print(
        f"queued as job {job} (position {queued.get('position', '?')}); output: {queue.log_path(job)}", file=sys.stderr
    )
    state = queue.wait(job)
    if state == "refused":
        print(f"the run queue refused {(queue.job(job) or {}).get('reason')}", file=sys.stderr)
        return 1
    with contextlib.suppress(OSError):  # never through a link planted under its name
        sys.stdout.write(safe_files.read_regular(queue.log_path(job)).decode(errors="replace"))
    rc = next((j["rc"] for j in queue.jobs() if j["id"] == job), None)
    return (rc if rc is not None else 0) if state == "ended" else 1
