"""Linear regression: reaches the true line, logs the agreed tags, stops, diverges loudly, never recompiles."""

from __future__ import annotations

import math

import chex
import jax
import numpy as np
import pytest

from training import regression
from training.config import RegressionConfig
from training.errors import Diverged
from training.regression import Params, init, loss, make_data, train_regression
from training.writers.base import MemoryWriter

TAGS = {"train/loss", "regression/weight", "regression/bias"}


class FlushCounter(MemoryWriter):
    """MemoryWriter that also records the order of writes and flushes."""

    def __init__(self) -> None:
        super().__init__()
        self.events: list[str] = []

    def write_scalars(self, step, scalars, progress=None):  # noqa: D102
        super().write_scalars(step, scalars, progress)
        self.events.append(f"scalars@{step}")

    def flush(self):  # noqa: D102
        self.events.append("flush")


def test_defaults_fit_the_true_line_and_match_the_jax_docs():
    writer = MemoryWriter()
    result = train_regression(RegressionConfig(), writer)
    w, b = result.final["regression/weight"], result.final["regression/bias"]
    assert result.state == "finished" and result.steps == 1000
    assert abs(w - 2.0) < 0.1 and abs(b + 1.0) < 0.1
    # The docs' loop: same key, data, init and plain `param - lr * grad` update.
    key = jax.random.key(42)
    x_key, noise_key = jax.random.split(key)
    xs = jax.random.normal(x_key, (128, 1))
    ys = xs * 2 - 1 + jax.random.normal(noise_key, (128, 1)) * 0.5
    x, y = make_data(RegressionConfig())
    np.testing.assert_allclose(np.ravel(xs), x, rtol=1e-6)
    np.testing.assert_allclose(np.ravel(ys), y, rtol=1e-6)
    update = jax.jit(lambda p: jax.tree.map(lambda q, g: q - 0.005 * g, p, jax.grad(loss)(p, xs, ys)))
    params = init(key)
    for _ in range(1000):
        params = update(params)
    assert w == pytest.approx(float(params.weight), abs=1e-4) and b == pytest.approx(float(params.bias), abs=1e-4)
    assert result.final["train/loss"] == pytest.approx(float(loss(params, xs, ys)), rel=1e-4)


def test_logs_tags_progress_and_snapshots():
    cfg = RegressionConfig(steps=205, log_every=10)
    writer = MemoryWriter()
    result = train_regression(cfg, writer)
    steps = [s for s, _ in writer.scalars]
    assert steps == [*range(10, 201, 10), 205]  # the 5-step remainder still runs
    assert all(set(d) == TAGS for _, d in writer.scalars)
    assert set(result.final) == TAGS
    p = writer.progress[-1]
    assert (p.step, p.total_steps, p.epoch, p.total_epochs) == (205, 205, 0, 0)
    assert p.compile_seconds > 0 and p.steps_per_sec > 0 and p.wall_seconds >= p.compile_seconds
    snaps = [s for s, _ in writer.regression]
    assert snaps[0] == 0 and snaps[-1] == 205 and 10 <= len(snaps) <= 13 and snaps == sorted(set(snaps))
    first, last = writer.regression[0][1], writer.regression[-1][1]
    assert (first.true_weight, first.true_bias) == (2.0, -1.0) and len(first.x) == 128
    assert last.weight == result.final["regression/weight"]
    assert writer.scalars[-1][1]["regression/bias"] == result.final["regression/bias"]


def test_no_recompiles_across_chunks():
    result = train_regression(RegressionConfig(steps=95, log_every=10), MemoryWriter())
    assert result.extra["traces"] == {"chunk[10]": 1, "chunk[5]": 1, "loss": 1}


def test_update_is_pure_and_traced_once():
    cfg = RegressionConfig()
    opt = regression.make_optimizer(cfg)
    x, y = make_data(cfg)
    params = init(jax.random.key(0))
    update = jax.jit(chex.assert_max_traces(regression.make_update(opt), n=1))
    state = opt.init(params)
    out1 = update(params, state, x, y)
    out2 = update(params, state, x, y)  # same inputs, same outputs: no hidden state
    chex.assert_trees_all_equal(out1, out2)
    assert isinstance(out1[0], Params) and set(out1[2]) == {"loss", "weight", "bias"}


def test_adam_and_a_million_points():
    cfg = RegressionConfig(points=1_000_000, optimizer="adam", lr=0.05, steps=300, log_every=50)
    writer = MemoryWriter()
    result = train_regression(cfg, writer)
    assert abs(result.final["regression/weight"] - 2.0) < 0.05 and abs(result.final["regression/bias"] + 1.0) < 0.05
    snap = writer.regression[-1][1]
    assert len(snap.x) == regression.SAMPLE_POINTS == len(snap.y)
    np.testing.assert_array_equal(snap.x, writer.regression[0][1].x)  # deterministic subsample


def test_same_config_same_metrics():
    cfg = RegressionConfig(steps=100, optimizer="adam", lr=0.02)
    a, b = MemoryWriter(), MemoryWriter()
    ra, rb = train_regression(cfg, a), train_regression(cfg, b)
    assert a.scalars == b.scalars and ra.final == rb.final
    c = MemoryWriter()
    train_regression(RegressionConfig(steps=100, optimizer="adam", lr=0.02, seed=7), c)
    assert c.scalars != a.scalars


def test_stop_request_ends_after_the_current_chunk():
    calls = []
    writer = MemoryWriter()
    result = train_regression(
        RegressionConfig(steps=1000, log_every=50), writer, lambda: calls.append(1) or len(calls) >= 3
    )
    assert result.state == "stopped" and result.steps == 150
    assert [s for s, _ in writer.scalars] == [50, 100, 150] and writer.regression[-1][0] == 150


def test_divergence_writes_the_chunk_then_names_the_first_bad_step():
    writer = FlushCounter()
    with pytest.raises(Diverged) as err:
        train_regression(RegressionConfig(lr=10.0, log_every=10), writer)
    bad = err.value.step
    last_step, last = writer.scalars[-1]
    assert last_step - 10 < bad <= last_step  # the bad step lies in the last written chunk
    assert not math.isfinite(last["train/loss"]) and all(math.isfinite(d["train/loss"]) for _, d in writer.scalars[:-1])
    assert writer.events[-2:] == [f"scalars@{last_step}", "flush"]
    assert "--lr 1" in str(err.value) and f"step {bad}" in str(err.value)
    # Replay the same steps by hand: the loss first goes non-finite exactly at `bad`.
    cfg = RegressionConfig(lr=10.0)
    opt = regression.make_optimizer(cfg)
    update = jax.jit(regression.make_update(opt))
    x, y = make_data(cfg)
    params = init(jax.random.key(cfg.seed))
    state = opt.init(params)
    for step in range(1, bad + 1):
        params, state, m = update(params, state, x, y)
        assert math.isfinite(float(m["loss"])) == (step < bad)
