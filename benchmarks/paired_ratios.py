"""Speed ratios of `benchmarks.log_overhead`'s rounds, each logged epoch paired with the epochs around it.

A round times an epoch with no run (`closed`), then in a new run an epoch logging every step (`logged`) and
one logging nothing (`open`); the next round's `closed` epoch follows the run's end. This VM's speed drifts
(whole seconds at a time slower, single epochs faster), so each logged epoch is compared with
the mean of the closed epochs just before and just after it, which cancels a drift that is linear over the
round; the ratio reported is the median over rounds, with a bootstrap 95% interval of that median.
"""

from __future__ import annotations

import random
import statistics
from typing import Any

RESAMPLES = 2000  # bootstrap resamples of the rounds' ratios


def paired(timed: dict[str, list[Any]]) -> dict[str, list[float]]:
    """Per round: no run over logging (`ratio`, the goal's), the run open and idle over logging (`marginal`),
    no run over the open idle run (`idle`). `timed["closed"]` holds one epoch more than the rounds: the one
    after the last run's end."""
    closed = [seconds for seconds, _ in timed["closed"]]
    logged = [seconds for seconds, _ in timed["logged"]]
    still_open = [seconds for seconds, _ in timed["open"]]
    around = [(before + after) / 2 for before, after in zip(closed, closed[1:], strict=False)]
    return {
        "ratio": [c / lg for c, lg in zip(around, logged, strict=True)],
        "marginal": [o / lg for o, lg in zip(still_open, logged, strict=True)],
        "idle": [c / o for c, o in zip(around, still_open, strict=True)],
    }


def interval(ratios: list[float], seed: int = 0) -> tuple[float, float]:
    """The bootstrap 95% interval of the median of `ratios` (rounds drawn again with replacement)."""
    rng = random.Random(seed)
    medians = sorted(statistics.median(rng.choices(ratios, k=len(ratios))) for _ in range(RESAMPLES))
    return medians[int(0.025 * RESAMPLES)], medians[int(0.975 * RESAMPLES) - 1]


def fastest_quarter(timed: dict[str, list[Any]]) -> float:
    """No run over logging, each kind by its fastest quarter of epochs (unpaired: reads the VM's fast spells)."""
    fast = {kind: statistics.quantiles([t for t, _ in timed[kind]], n=4)[0] for kind in ("closed", "logged")}
    return fast["closed"] / fast["logged"]


def describe(timed: dict[str, list[Any]]) -> str:
    """One row's line: the paired median ratio and its interval, the marginal and idle medians, the fastest
    quarter's ratio."""
    per_round = paired(timed)
    low, high = interval(per_round["ratio"])
    median = {kind: statistics.median(values) for kind, values in per_round.items()}
    return (
        f"{median['ratio']:.3f}x [{low:.3f}-{high:.3f}]   marginal {median['marginal']:.3f}x   "
        f"idle {median['idle']:.3f}x   fastest quarter {fastest_quarter(timed):.3f}x"
    )
