"""How long the device waits between chunks in a real CLI run: from a chunk's landing to the next dispatch.

    python -m benchmarks.chunk_gaps [CLI args; default: mnist --dataset fashion_mnist --epochs 3 ...]

Runs `python -m training ...` in this process (every writer on unless the args say otherwise,
W&B offline into a temporary folder) with the engine's clock watched: whenever a chunk lands and
no other chunk is queued, the wall time until the next dispatch is a gap in which the device has
no training work. A gap shows what the host does while the device waits (an epoch's evaluation,
histograms and checkpoint before #39: 40-370 ms each under load). Wall times, but the gaps are
the host's own work between two calls, so a loaded machine stretches them without hiding them.
Prints the total, and each gap over 5 ms with the step after which it fell.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from typing import Any

from training.runs import warm_worker

GAP_REPORTED_S = 0.005


class GapWatch:
    """Wraps `Clock.launch` / `Clock.land` to record the wall time with no chunk queued."""

    def __init__(self) -> None:
        self.gaps: list[tuple[int, float]] = []  # (step landed, seconds until the next dispatch)
        self.queued, self.step, self.landed_at = 0, 0, None

    def install(self) -> None:
        """Patch the engine's clock (this process only)."""
        from training.engine import chunks

        launch, land, watch = chunks.Clock.launch, chunks.Clock.land, self

        def watched_launch(clock: Any, fn: Any, length: int, *args: Any, **kwargs: Any) -> Any:
            if watch.queued == 0 and watch.landed_at is not None:
                watch.gaps.append((watch.step, time.perf_counter() - watch.landed_at))
            watch.queued += 1
            return launch(clock, fn, length, *args, **kwargs)

        def watched_land(clock: Any, launched: Any) -> Any:
            out = land(clock, launched)
            watch.queued, watch.step, watch.landed_at = (
                watch.queued - 1,
                watch.step + launched.length,
                time.perf_counter(),
            )
            return out

        chunks.Clock.launch, chunks.Clock.land = watched_launch, watched_land


def main(argv: list[str] | None = None) -> None:
    """Run the CLI with the gaps watched; print them."""
    args = argv if argv is not None else sys.argv[1:]
    with tempfile.TemporaryDirectory(prefix="chunk-gaps-") as tmp:
        args = args or ["mnist", "--dataset", "fashion_mnist", "--epochs", "3", "--batch-size", "32", "--quiet"]
        args = [*args, "--runs-root", tmp, "--wandb", "offline"] if "--runs-root" not in args else args
        os.environ.update(WANDB_MODE="offline", WANDB_SILENT="true", WANDB_DISABLE_GIT="true", WANDB_DIR=tmp)
        warm_worker.share_the_machine()  # one XLA thread, as the CLI trains
        watch = GapWatch()
        watch.install()
        from training.__main__ import main as cli

        cli(args)
    big = [(step, round(seconds * 1e3, 1)) for step, seconds in watch.gaps if seconds > GAP_REPORTED_S]
    total = sum(seconds for _, seconds in watch.gaps)
    print(
        f"chunk_gaps total={total * 1e3:.1f} ms over {len(watch.gaps)} dispatches (load {os.getloadavg()[0]:.1f}); "
        f"over {GAP_REPORTED_S * 1e3:.0f} ms (after step, ms): {big}"
    )


if __name__ == "__main__":
    main()
