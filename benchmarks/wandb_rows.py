"""CPU a W&B history row costs: `run.log` one row at a time vs the rows of a flush in one hop (`one_hop`).

    .venv/bin/python -m benchmarks.wandb_rows [--rows 40000] [--rounds 3]

Logs `--rows` rows of {"loss", "global_step"} to an offline run in blocks of 1,000 (what the writer
process gets per flush of a loop logging every step), both ways, alternating for `--rounds` rounds.
Prints the CPU per row of this process (wandb's Python) and of its children (wandb-core), the
median of each way, and the ratio one hop / one at a time.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.log_cpu import children_cpu  # noqa: E402
from runwriters.wandb.one_hop import one_hop  # noqa: E402

BLOCK = 1000


def settled_children_cpu() -> float:
    """Children's CPU once wandb-core has written what it was sent (it stops growing)."""
    before = children_cpu()
    while True:
        time.sleep(0.5)
        now = children_cpu()
        if now - before < 0.01:
            return now
        before = now


def cost_per_row(run, rows: int, batched: bool, first: int) -> tuple[float, float]:  # noqa: ANN001
    """(Python us/row, wandb-core us/row) of logging `rows` rows from step `first`."""
    py0, core0 = time.process_time(), settled_children_cpu()
    for start in range(first, first + rows, BLOCK):
        with one_hop(run) if batched else contextlib.nullcontext():
            for step in range(start, start + BLOCK):
                run.log({"loss": 1.0 / (step + 1), "global_step": step}, step=step, commit=False)
    py1 = time.process_time()
    core1 = settled_children_cpu()
    return 1e6 * (py1 - py0) / rows, 1e6 * (core1 - core0) / rows


def main() -> None:
    """Alternate the two ways for --rounds rounds and print their costs."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=40_000, help="rows per way and round (a multiple of 1,000)")
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args()
    os.environ.setdefault("WANDB_ERROR_REPORTING", "false")  # as in jaxdash's writer process
    import wandb

    costs: dict[bool, list[tuple[float, float]]] = {False: [], True: []}
    with tempfile.TemporaryDirectory() as tmp:
        run = wandb.init(project="wandb-rows", dir=tmp, mode="offline", settings={"silent": True})
        run.define_metric("loss", step_metric="global_step", summary="min")
        step = 0
        for _ in range(args.rounds):
            for batched in (False, True):
                costs[batched].append(cost_per_row(run, args.rows, batched, step))
                step += args.rows
        run.finish()
    print(f"W&B offline, {args.rows:,} rows per way and round, blocks of {BLOCK:,}; load {os.getloadavg()[0]:.2f}")
    totals = {}
    for batched, name in ((False, "run.log one at a time"), (True, "one hop per block")):
        py = statistics.median(c[0] for c in costs[batched])
        core = statistics.median(c[1] for c in costs[batched])
        totals[batched] = py + core
        rounds = ", ".join(f"{a:.0f}+{b:.0f}" for a, b in costs[batched])
        print(f"  {name:22s} python {py:5.1f} us/row  wandb-core {core:5.1f} us/row  (rounds: {rounds})")
    print(f"  one hop / one at a time: {totals[True] / totals[False]:.2f}x the CPU per row")


if __name__ == "__main__":
    main()
