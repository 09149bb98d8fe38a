"""Metric series: downsample and smooth them; progress text.

Pure numpy: no JAX, no Streamlit, no plotly. A series is a pair of float arrays (x, y).
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from typing import Any

import numpy as np

from runstore.metrics.downsample import bucket_extremes
from runstore.processes import STALL_S as STALL_S  # re-export (tests)
from runstore.processes import stalled_since

Series = tuple[np.ndarray, np.ndarray]


def downsample_minmax(x: np.ndarray, y: np.ndarray, max_points: int = 2000) -> Series:
    """At most `max_points` points that keep the shape of the curve, spikes included.

    Splits x into max_points // 4 equal-width buckets and keeps each bucket's first, min, max and
    last point (runstore/metrics/downsample.py, the server's thinning too), in x order. Deterministic and O(n); first and last
    points always survive; NaN is ignored when choosing min/max (an all-NaN bucket keeps
    its first/last NaN, so divergence still shows as a gap). A series already short enough
    comes back unchanged, so applying it twice changes nothing.
    """
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError(f"x and y must be 1-D and of equal length, got {x.shape} and {y.shape}")
    if max_points < 4:
        raise ValueError(f"max_points must be at least 4 (first/min/max/last), got {max_points}")
    n = x.size
    if n <= max_points:
        return x.copy(), y.copy()
    keep = np.unique(bucket_extremes(x, y, max_points // 4))
    keep = keep[np.argsort(x[keep], kind="stable")]  # x order (a resumed run's x may go back)
    return x[keep], y[keep]


def ema_smooth(y: np.ndarray, weight: float) -> np.ndarray:
    """TensorBoard's debiased exponential moving average ("classic" smoothing).

    weight 0 is no smoothing; it is clamped to [0, 0.999] so a slider at 1.0 cannot flatten
    the curve to zero. Like TensorBoard, non-finite values pass through unchanged and do not
    enter the average, and the debias divisor counts finite points only, so early values
    are not pulled towards the zero the average starts from. A constant series is
    returned as is (TensorBoard #786: the division would add rounding wiggles).
    """
    y = np.asarray(y, dtype=float)
    w = float(weight) if math.isfinite(weight) else 0.0
    w = min(max(w, 0.0), 0.999)
    out = y.copy()
    if w == 0.0 or y.size == 0 or np.all(y == y[0]):
        return out
    last = 0.0
    n_acc = 0
    vals = y.tolist()  # a plain loop over Python floats beats per-element numpy indexing
    for i, v in enumerate(vals):
        if not math.isfinite(v):
            continue
        last = last * w + (1.0 - w) * v
        n_acc += 1
        out[i] = last / (1.0 - w**n_acc)
    return out


def _fmt_duration(s: float) -> str:
    if not math.isfinite(s) or s < 0:
        return "?"
    if s < 60:
        return f"{s:.0f} s" if s >= 10 else f"{s:.1f} s"
    if s < 3600:
        return f"{int(s // 60)} min {int(s % 60):02d} s"
    return f"{int(s // 3600)} h {int(s % 3600 // 60):02d} min"


def _num(v: Any) -> float | None:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def _rate(r: float, unit: str = " steps/s") -> str:
    return f"{r:,.0f}{unit}" if r >= 100 else f"{r:.3g}{unit}"


def progress_text(status: Mapping[str, Any], now: float | None = None) -> str:
    """One line of progress from status.json, e.g.
    "epoch 2/3 · step 2,345/5,625 · 1,234 steps/s · ETA 3.1 s · compile 1.2 s".
    Missing fields are left out; ETA only while running, total time once finished; a phase other
    than "training" ("loading data", "compiling") comes first while the run is active. A stalled
    run (status["stalled_since"] from runstore.processes.with_stall, or given `now`, status.json
    unchanged for STALL_S) reads "stalled since HH:MM:SS" first, with no rate and no ETA (a process
    paused with SIGSTOP, swapped out, or hung in I/O).
    """
    parts: list[str] = []
    since = _num(status.get("stalled_since"))  # runstore.processes.with_stall: sooner for a stopped process
    if since is None and now is not None:
        since = stalled_since(status, now)
    stalled = since is not None
    phase = status.get("phase")
    if status.get("state") == "queued":  # waits for a free slot in the run queue
        parts.append(f"queued: #{status.get('position', '?')} in the run queue")
    if status.get("state") in ("starting", "running") and isinstance(phase, str) and phase != "training":
        parts.append(f"{phase}…")  # e.g. "loading data…", "compiling…" before the first point
    epoch, total_epochs = _num(status.get("epoch")), _num(status.get("total_epochs"))
    if epoch and total_epochs:  # 0 epochs: a task without epochs (regression)
        parts.append(f"epoch {int(epoch)}/{int(total_epochs)}")
    step, total = _num(status.get("step")), _num(status.get("total_steps"))
    if step is not None:
        parts.append(f"step {int(step):,}/{int(total):,}" if total else f"step {int(step):,}")
    sps = _num(status.get("steps_per_sec"))
    running = status.get("state", "running") == "running"
    wall, compile_s = _num(status.get("wall_seconds")), _num(status.get("compile_seconds"))
    # The rate shown is the end-to-end one (logging, evaluation and checkpoints included), the one
    # the ETA uses, so steps/s x ETA is the time left and the final "took" agrees with both; the
    # chunks' compute rate follows in brackets when it is far higher.
    busy = (wall or 0.0) - (compile_s or 0.0)
    rate = step / busy if step and busy > 0 else sps
    if stalled:
        clock = time.strftime("%H:%M:%S", time.localtime(since))
        quiet = f" (no progress for {_fmt_duration(now - since)}: paused, or stuck?)" if now is not None else ""
        parts.insert(0, f"stalled since {clock}{quiet}")
    elif rate is not None and rate > 0 and (running or not wall):
        parts.append(_rate(rate) + (f" (compute {_rate(sps, '/s')})" if sps and sps > 1.5 * rate else ""))
    if running and not stalled and rate and step is not None and total and total > step:
        parts.append(f"ETA {_fmt_duration((total - step) / rate)}")
    if not running and wall is not None:
        parts.append(f"took {_fmt_duration(wall)}")
    if compile_s is not None:
        parts.append(f"compile {compile_s:.1f} s")
    return " · ".join(parts) if parts else "waiting for the first step…"
