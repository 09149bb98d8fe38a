"""`python -m training TASK ... --queue`: the run waits in the queue for a free slot, then trains."""

from __future__ import annotations

import sys
from pathlib import Path

from runstore import run_store
from training.queue.store import Queue


def run_queued(task: str, argv: list[str], root: Path | None) -> int:
    """Submit the same command without --queue, wait for it, print its output; its exit code."""
    queue = Queue(run_store.runs_root(root))
    job = queue.submit([task, *(a for a in argv if a != "--queue")], label=task)
    queued = next((j for j in queue.jobs() if j["id"] == job), {})
    print(
        f"queued as job {job} (position {queued.get('position', '?')}); output: {queue.log_path(job)}", file=sys.stderr
    )
    state = queue.wait(job)
    if queue.log_path(job).exists():
        sys.stdout.write(queue.log_path(job).read_text(errors="replace"))
    rc = next((j["rc"] for j in queue.jobs() if j["id"] == job), None)
    return (rc if rc is not None else 0) if state == "ended" else 1
