"""Pieces of the chunked training loop: compiled chunk cache, chunk plan, clock.

A chunk is K optimizer steps run by `jax.lax.scan` inside one jitted call. Scan lengths are
static, so each distinct length compiles once; a loop uses at most two (K and the remainder).
Compilation is done ahead of time (`jit(...).lower(...).compile()`) so its cost is measured
exactly rather than guessed from the first chunk, and a shape change fails loudly instead of
silently recompiling.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import jax
import numpy as np

from runstore.env_numbers import env_number

_AHEAD = ThreadPoolExecutor(max_workers=1, thread_name_prefix="compile-ahead")
UNROLL_ENV = "JAXDASH_SCAN_UNROLL"


def scan_unroll() -> int:
    """Steps per iteration of a chunk's `lax.scan`: `$JAXDASH_SCAN_UNROLL`, else 1.

    A measuring knob (`benchmarks.train_speed`'s variants), not a speed-up: unrolling changed no
    result and no steady rate beyond noise on an H100 (unroll 4 and 16: 0.079 and 0.075 s an
    epoch vs 0.073), and on the CPU it compiled ~0.4 s longer for 5-8% faster epochs.

    Raises:
      ValueError: the variable is set to anything but a positive integer.
    """
    return int(env_number(UNROLL_ENV, 1, integer=True, minimum=1))


class TraceCounter:
    """Counts how often each wrapped function is traced by JAX (a retrace means a recompile)."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()

    def wrap(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        """`fn` with a trace-time side effect; runs only while JAX traces, never in compiled code."""

        def traced(*args: Any) -> Any:
            self.counts[name] += 1
            return fn(*args)

        return traced


class ChunkCompiler:
    """One ahead-of-time compiled chunk function per scan length, its state argument donated.

    Args:
      make_chunk: length -> pure function `(state, *data) -> (state, stacked_metrics)`.
      traces: counter shared with the caller's other jitted functions.
    """

    def __init__(self, make_chunk: Callable[[int], Callable[..., Any]], traces: TraceCounter):
        self.make_chunk = make_chunk
        self.traces = traces
        self.compile_seconds = 0.0
        self._compiled: dict[int, Any] = {}
        self._ahead: dict[int, Future] = {}  # lengths being compiled on the compile-ahead thread

    def get(self, length: int, *args: Any) -> Callable[..., Any]:
        """The compiled chunk for `length`, compiling (and timing it) on first use."""
        if length in self._ahead:
            self._compiled[length] = self._ahead.pop(length).result()
        fn = self._compiled.get(length)
        if fn is None:
            fn = self._compiled[length] = self._compile(length, *args)
        return fn

    def compile_ahead(self, length: int, *args: Any) -> None:
        """Start compiling `length` on another thread, from `args`' shapes (the arrays may be donated meanwhile).

        The loop calls it while the first chunk runs on the device, for the epoch's shorter last
        chunk: its ~0.1 s of tracing and compiling then overlaps the device's work instead of
        following it (a sweep's population of three MLPs: ~0.1 s of its ~1 s).
        """
        if length not in self._compiled and length not in self._ahead:
            shapes = jax.tree.map(_shape_of, args)
            self._ahead[length] = _AHEAD.submit(self._compile, length, *shapes)

    def _compile(self, length: int, *args: Any) -> Any:
        t0 = time.perf_counter()
        jitted = jax.jit(self.traces.wrap(f"chunk[{length}]", self.make_chunk(length)), donate_argnums=(0,))
        compiled = jitted.lower(*args).compile()
        self.compile_seconds += time.perf_counter() - t0
        return compiled


def _shape_of(leaf: Any) -> Any:
    """A device array as the shape, dtype, weak type and sharding it is compiled for; anything else as it is."""
    if isinstance(leaf, jax.Array):
        return jax.ShapeDtypeStruct(leaf.shape, leaf.dtype, sharding=leaf.sharding, weak_type=leaf.weak_type)
    return leaf


def compile_ahead(jitted: Any, *args: Any) -> Future:
    """`jitted` compiled for `args`' shapes on the compile-ahead thread (a Future of the compiled function)."""
    shapes = jax.tree.map(_shape_of, args)
    return _AHEAD.submit(lambda: jitted.lower(*shapes).compile())


def chunk_lengths(steps: int, k: int) -> list[int]:
    """Split `steps` into chunks of `k` plus one shorter remainder chunk (at most two distinct lengths)."""
    full, rest = divmod(steps, k)
    return [k] * full + ([rest] if rest else [])


def chunk_plan(epoch: int, pos: int, steps_per_epoch: int, k: int, epochs: int) -> list[tuple[int, int, int]]:
    """Every chunk left from step `pos` of `epoch` (1-based) to the end: (epoch, start in the epoch, length).

    One flat list, so the chunk after an epoch's last is known and can be dispatched before the
    epoch-end work (evaluation, histograms, checkpoint). Chunks start at multiples of `k`.
    """
    if pos == steps_per_epoch:  # resumed at an epoch's end: the next epoch is next
        epoch, pos = epoch + 1, 0
    lengths = chunk_lengths(steps_per_epoch, k)
    plan = []
    for e in range(epoch, epochs + 1):
        start = pos if e == epoch else 0
        for length in lengths[start // k :]:
            plan.append((e, start, length))
            start += length
    return plan


class Clock:
    """Wall time since training started and a smoothed steps/s over recent chunks."""

    SMOOTHING = 0.3  # weight of the newest chunk in the moving average of the rate

    def __init__(self) -> None:
        self.start = time.perf_counter()
        self.steps_per_sec: float | None = None
        self._ran: set[int] = set()  # ids of compiled chunks already run once

    def elapsed(self) -> float:
        """Seconds since the run started (a resumed run continues its checkpoint's clock)."""
        return time.perf_counter() - self.start

    def launch(
        self, fn: Callable[..., Any], length: int, *args: Any, dispatched: Callable[[Any], None] | None = None
    ) -> Launched:
        """Dispatch one compiled chunk (JAX returns at once; the device computes meanwhile).

        `dispatched(state)` is called while the device computes (the new state's shapes are
        known, its values not yet).
        """
        t0 = time.perf_counter()
        state, metrics = fn(*args)
        if dispatched is not None:
            dispatched(state)
        return Launched(fn, length, t0, state, metrics)

    def land(self, launched: Launched) -> tuple[Any, Any]:
        """Bring a launched chunk's metrics to the host: (device state, host metrics).

        The `jax.device_get` is the chunk's one device->host sync; timing stops after it, so
        steps/s is real compute, not dispatch (a chunk launched before the previous chunk's writes
        counts those writes' wall time, which overlapped it). A compiled chunk's first run pays
        one-off warm-up (allocation, thread pools), so it only sets the rate when there is no
        steadier one yet.
        """
        fn, length = launched.fn, launched.length
        metrics = jax.device_get(launched.metrics)  # sync point: metrics leave the device once per chunk
        dt = time.perf_counter() - launched.t0
        rate = length / dt if dt > 0 else math.inf
        if self.steps_per_sec is None:
            self.steps_per_sec = rate
        elif id(fn) in self._ran:
            self.steps_per_sec += self.SMOOTHING * (rate - self.steps_per_sec)
        self._ran.add(id(fn))
        return launched.state, metrics


@dataclass
class Launched:
    """A chunk dispatched to the device: its compiled function, length, start time and output futures."""

    fn: Any
    length: int
    t0: float
    state: Any
    metrics: Any


def check_scalar_metrics(metrics: Mapping[str, Any]) -> None:
    """Every metric a step returns must be one number: (members, steps) here after the chunk's scan.

    Raises:
      ValueError: naming the metric, its shape per step and the fix.
    """
    for name, values in metrics.items():
        shape = np.shape(values)
        if len(shape) != 2:
            per_step = tuple(shape[2:]) if len(shape) > 2 else ()
            raise ValueError(
                f"metric {name!r} is an array of shape {per_step} per step; a step's metrics must be scalars "
                f"(reduce it, e.g. jnp.mean(...), or return it from summarize as an image or table)"
            )
