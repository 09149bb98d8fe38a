"""What the loop's own thread can spend in `log` before the loop slows: the same CPU a step, spread or in bursts,
or spent by another process instead.

    .venv/bin/python -m benchmarks.loop_stalls [--rounds 30]

The loop of `benchmarks.log_overhead` (the seed's jitted Flax MNIST step on Fashion-MNIST, batch 32), its `log`
spinning on the loop's thread (holding the GIL, as Python work does): a few us every step, or the same time in
one stall every N steps; and, with `log` doing nothing, a process of its own spinning about as much CPU an epoch
in bursts of 1 ms (what a writer process at normal priority doing the logging's work would cost). Each pattern's
epoch against the no-logging epoch of the same round (the patterns take turns, in alternating order): the
median ratio over rounds [its bootstrap 95% interval]. This says whether a logging design should spread its work
across steps, may gather it, or gains by moving it out of the training process.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402

from benchmarks.log_overhead import Loop, _quiet, warm_loop  # noqa: E402
from benchmarks.paired_ratios import interval  # noqa: E402

# name -> (us spun, every how many steps): ~9 ms an epoch of 1,875 steps each, but the first
PATTERNS = {
    "5 us a step": (5, 1),
    "0.3 ms / 64": (300, 64),
    "1.5 ms / 320": (1500, 320),
    "9 ms / 1875": (9000, 1875),
}
ELSEWHERE = "1 ms / 48 ms, a process"  # another process spinning 1 ms of its CPU every 48 ms: ~9 ms an epoch
ELSEWHERE_SPIN = """
import time
while True:
    until = time.thread_time() + 0.001
    while time.thread_time() < until:
        pass
    time.sleep(0.048)
"""


def spinner(us: float, every: int) -> Callable[[int, object], None]:
    """A `log(step, loss)` holding the thread for `us` every `every` steps."""
    seconds, clock = us / 1e6, time.perf_counter

    def log(step: int, loss: object) -> None:
        if step % every == 0:
            until = clock() + seconds
            while clock() < until:
                pass

    return log


def timed_epoch(loop: Loop, name: str) -> float:
    """One epoch's seconds with pattern `name`: the loop's `log` spinning, or another process spinning (started
    before the epoch, its interpreter's start untimed, and ended after it)."""
    if name in PATTERNS:
        return loop.epoch(spinner(*PATTERNS[name]))[0]
    if name != ELSEWHERE:
        return loop.epoch(_quiet)[0]
    other = subprocess.Popen([sys.executable, "-S", "-c", ELSEWHERE_SPIN])
    try:
        time.sleep(0.1)
        return loop.epoch(_quiet)[0]
    finally:
        other.kill()
        other.wait()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=30)
    args = p.parse_args()
    loop = warm_loop()
    names = ["none", *PATTERNS, ELSEWHERE]
    seconds: dict[str, list[float]] = {name: [] for name in names}
    for round_no in range(args.rounds):
        for name in names if round_no % 2 == 0 else names[::-1]:
            seconds[name].append(timed_epoch(loop, name))
    none = np.array(seconds["none"])
    print(f"{args.rounds} rounds, {loop.steps} steps an epoch, no logging {np.median(none):.3f} s an epoch (median)")
    for name in names[1:]:
        ratios = (none / np.array(seconds[name])).tolist()
        low, high = interval(ratios)
        print(f"  {name:23s} {np.median(ratios):.3f}x [{low:.3f}-{high:.3f}] of no logging")


if __name__ == "__main__":
    main()
