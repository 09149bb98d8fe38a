"""The one downsampler: a curve's first, min, max and last point per bucket, so spikes survive.

Pure numpy. The server thins a run's in-memory columns with it (runstore/metrics/metric_table.py)
and the figure builders thin each drawn series (components/series.py): one rule, one place.
"""

from __future__ import annotations

import numpy as np


def bucket_extremes(x: np.ndarray, y: np.ndarray, n_buckets: int) -> np.ndarray:
    """Positions of the first, min, max and last point of each equal-width x bucket (NaN never wins)."""
    lo, hi = float(x.min()), float(x.max())
    scaled = (x - lo) / (hi - lo) * n_buckets if hi > lo else np.zeros(x.size)
    bucket = np.minimum(scaled.astype(np.int64), n_buckets - 1)
    order = np.lexsort((np.arange(x.size), bucket))  # by bucket, then file order
    b = bucket[order]
    starts = np.flatnonzero(np.r_[True, b[1:] != b[:-1]])
    ends = np.r_[starts[1:], b.size] - 1
    group = np.repeat(np.arange(starts.size), ends - starts + 1)
    ys = y[order]
    low = np.where(np.isnan(ys), np.inf, ys)
    high = np.where(np.isnan(ys), -np.inf, ys)
    picks = [starts, ends]
    for vals, best in ((low, np.minimum.reduceat(low, starts)), (high, np.maximum.reduceat(high, starts))):
        hits = np.flatnonzero(vals == best[group])
        first = np.r_[True, group[hits][1:] != group[hits][:-1]]
        picks.append(hits[first])
    return order[np.concatenate(picks)]
