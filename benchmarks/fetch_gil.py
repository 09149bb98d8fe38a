"""What reading and freeing logged JAX arrays on a second thread costs a training loop's thread, through the GIL.

    .venv/bin/python -m benchmarks.fetch_gil [--arrays 2000] [--rounds 7]

A thread that reads each logged array to the host and lets it go beside a training loop's thread running
Python (dispatching steps) shares the GIL with it. A call that releases the GIL and takes it back must
wait for the other thread to let go, and each hand-over stalls that thread. For `--arrays` ready CPU arrays
(a jitted step's loss each), this prints, per array, the wall time of each way of reading or freeing it,
alone and beside a thread running Python (the stand-in for the loop), and the time that thread lost an array
(the counts it missed meanwhile, at its speed alone), medians over rounds in one run:
  np.asarray     what `jax.device_get` and `np.asarray` do (releases the GIL for every array);
  host_value     `jaxdash.host_values.host_value` (reads the buffer, keeps the GIL);
  free here      dropping the arrays in this (the second) thread;
  free in loop   what the client does: the thread that logs frees them (`Fetcher.put`), as a loop that logs
                 nothing frees its loss every step: no hand-over (its time lost is the frees themselves).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from jaxdash.host_values import host_value  # noqa: E402


class Spinner:
    """A thread running Python, counting; `rate()` is its count per second since `mark()`."""

    def __init__(self) -> None:
        self.count, self.stop, self.take = 0, False, None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self._from = (0, time.perf_counter())

    def _run(self) -> None:
        while not self.stop:
            self.count += 1
            if self.take is not None:  # "free in loop": this thread drops the arrays handed to it
                self.take, taken = None, self.take
                taken.clear()

    def mark(self) -> None:
        self._from = (self.count, time.perf_counter())

    def rate(self) -> float:
        return (self.count - self._from[0]) / (time.perf_counter() - self._from[1])


def ready_arrays(n: int) -> list[jax.Array]:
    step = jax.jit(lambda x: x * 2.0)
    return jax.block_until_ready([step(jnp.float32(i)) for i in range(n)])


def ways(spinner: Spinner | None) -> dict[str, Callable[[list[jax.Array]], None]]:
    def free_in_loop(arrays: list[jax.Array]) -> None:
        if spinner is None:
            arrays.clear()
            return
        spinner.take = arrays
        while spinner.take is not None:
            time.sleep(0.001)

    return {
        "np.asarray": lambda arrays: [np.asarray(a) for a in arrays],
        "host_value": lambda arrays: [host_value(a) for a in arrays],
        "free here": lambda arrays: [arrays.pop() for _ in range(len(arrays))],
        "free in loop": free_in_loop,
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--arrays", type=int, default=2000, help="ready arrays each way reads or frees")
    p.add_argument("--rounds", type=int, default=7, help="rounds of each way; the median is printed")
    args = p.parse_args()
    alone = {}
    for name, way in ways(None).items():
        times = []
        for _ in range(args.rounds):
            arrays = ready_arrays(args.arrays)
            t0 = time.perf_counter()
            way(arrays)
            times.append((time.perf_counter() - t0) / args.arrays * 1e6)
        alone[name] = statistics.median(times)
    spinner = Spinner()
    spinner.thread.start()
    time.sleep(0.2)
    spinner.mark()
    time.sleep(0.5)
    free_rate = spinner.rate()
    print(f"{args.arrays:,} ready float32 arrays, jax {jax.__version__} on {jax.default_backend()}; "
          f"load {os.getloadavg()[0]:.2f}")  # fmt: skip
    print("  way            us an array: alone   beside a thread running Python   that thread's time lost")
    for name, way in ways(spinner).items():
        walls, losts = [], []
        for _ in range(args.rounds):
            arrays = ready_arrays(args.arrays)
            spinner.mark()
            t0 = time.perf_counter()
            way(arrays)
            wall = time.perf_counter() - t0
            walls.append(wall / args.arrays * 1e6)
            losts.append(wall * (1 - spinner.rate() / free_rate) / args.arrays * 1e6)
        print(f"  {name:13s} {alone[name]:19.2f} {statistics.median(walls):32.2f} {statistics.median(losts):25.2f}")
    spinner.stop = True
    spinner.thread.join()


if __name__ == "__main__":
    main()
