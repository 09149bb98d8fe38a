"""Where `run.log`'s cost on the loop's thread goes: the CPU of each piece of the client's logging path a step.

    .venv/bin/python -m benchmarks.log_pieces [--rounds 6]

The loop of `benchmarks.log_overhead` (the seed's jitted Flax MNIST step on Fashion-MNIST, batch 32) logging every
step with every writer (`run.log({"loss": loss})`), a new run a round as there. The pieces called once a batch (every
64 steps or a read, not every step, so timing them costs the loop nothing it would notice) are wrapped to add up
their thread CPU on the loop's thread, in the timed logged epochs only; indented pieces run inside the one above
them. Printed: the loop thread's CPU a step with no run and logging (medians over rounds), then each piece's
microseconds a logged step, its calls per 1,000 steps and its microseconds a call. What the pieces leave of the
difference is `log` and `put` themselves, run every step.
"""

from __future__ import annotations

import argparse
import collections
import functools
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


from benchmarks.log_cpu import child_pids, wait_gone  # noqa: E402
from benchmarks.log_overhead import Loop, _quiet, loggers, warm_loop  # noqa: E402
from jaxdash import fetcher, row_parts, rows_out, stacking  # noqa: E402
from runwriters import base, store  # noqa: E402

# (owner, attribute, depth): the pieces, in the order printed; depth is how far inside the first one each runs
PIECES = [
    (fetcher.Fetcher, "_take_inbox", 0),
    (fetcher.Fetcher, "_add_inbox", 1),
    (stacking, "_stack", 2),
    (fetcher, "read_ready", 1),
    (fetcher.Fetcher, "_write_read", 1),
    (row_parts.Split, "__call__", 2),
    (rows_out.RowsOut, "_hand", 2),
    (store.RunStoreWriter, "write_scalar_rows", 3),
    (rows_out.RowsOut, "_note", 3),
    (base.MultiWriter, "flush", 2),
]


class Tally:
    """Thread CPU (ns) and calls of each wrapped piece on the loop's thread while `on`."""

    def __init__(self) -> None:
        self.on = False
        self.ns: collections.Counter[str] = collections.Counter()
        self.calls: collections.Counter[str] = collections.Counter()
        self.loop_thread = threading.main_thread()

    def wrap(self, owner: Any, name: str) -> str:
        """Replace `owner.name` by a wrapper that tallies it; returns the piece's label."""
        label = f"{getattr(owner, '__name__', owner)}.{name}".replace("jaxdash.", "")
        original = getattr(owner, name)

        @functools.wraps(original)
        def tallied(*args: Any, **kwargs: Any) -> Any:
            if not self.on or threading.current_thread() is not self.loop_thread:
                return original(*args, **kwargs)
            started = time.thread_time_ns()
            try:
                return original(*args, **kwargs)
            finally:
                self.ns[label] += time.thread_time_ns() - started
                self.calls[label] += 1

        setattr(owner, name, tallied)
        return label


def tallied_rounds(loop: Loop, start: Callable[[], Callable], end: Callable[[], None], tally: Tally,
                   rounds: int) -> tuple[list[float], list[float]]:  # fmt: skip
    """`rounds` of: an epoch with no run, then in a new run an untimed epoch logging and a tallied one; the loop
    thread's CPU a step of the no-run and the logged epochs."""
    closed, logged = [], []
    for _ in range(rounds):
        closed.append(loop.epoch(_quiet)[1][0])
        before = child_pids()
        log = start()
        loop.epoch(log)
        tally.on = True
        logged.append(loop.epoch(log)[1][0])
        tally.on = False
        end()
        wait_gone(child_pids() - before)
    return closed, logged


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=6)
    args = p.parse_args()
    loop = warm_loop()
    tally = Tally()
    labels = [(tally.wrap(owner, name), depth) for owner, name, depth in PIECES]
    start, end = loggers(Path(tempfile.mkdtemp()))["jaxdash"]
    closed, logged = tallied_rounds(loop, start, end, tally, args.rounds)
    steps = loop.steps * args.rounds
    no_run, logging = statistics.median(closed), statistics.median(logged)
    print(f"{args.rounds} rounds, {loop.steps} steps an epoch; the loop's thread, us a step (median): no run "
          f"{no_run:.1f}, logging every step {logging:.1f} (+{logging - no_run:.1f})")  # fmt: skip
    for label, depth in labels:
        ns, calls = tally.ns[label], tally.calls[label]
        print(f"  {'  ' * depth}{label:{40 - 2 * depth}s} {ns / 1e3 / steps:6.2f} us a step   "
              f"{calls / steps * 1000:6.2f} calls / 1000 steps   {ns / 1e3 / max(calls, 1):7.1f} us a call")  # fmt: skip


if __name__ == "__main__":
    main()
