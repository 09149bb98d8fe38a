"""Linear regression task on the engine: reaches the true line, logs the agreed tags, stops, diverges loudly, never recompiles."""

from __future__ import annotations

import math

import chex
import jax
import numpy as np
import pytest

from runstore import tags
from runwriters.base import MemoryWriter
from training.engine.chunks import UNROLL_ENV
from training.runs.in_memory import train
from training.tasks.regression import Params, RegressionConfig, RegressionTask, init_params, loss, make_data

TAGS = {"train/loss", "regression/weight", "regression/bias", "perf/steps_per_sec", "sys/cpu_percent", "sys/rss_mb"}


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


def curves(writer: MemoryWriter) -> list[tuple[int, dict]]:
    """(step, {"x", "y", "y_true"}) of every fitted-curve table written."""
    return [
        (s, {c: t[tags.FIT_CURVE].column(c) for c in t[tags.FIT_CURVE].columns})
        for s, t in writer.tables
        if tags.FIT_CURVE in t
    ]


def test_defaults_fit_the_true_line_and_match_the_jax_docs():
    writer = MemoryWriter()
    (result,) = train(RegressionTask, RegressionConfig(), writer)
    w, b = result.final["regression/weight"], result.final["regression/bias"]
    assert result.state == "finished" and result.steps == 1000
    assert w == pytest.approx(1.97228, abs=1e-5) and b == pytest.approx(-1.03314, abs=1e-5)
    # The docs' loop: same key, data, init and plain `param - lr * grad` update.
    key = jax.random.key(42)
    x_key, noise_key = jax.random.split(key)
    xs = jax.random.normal(x_key, (128, 1))
    ys = xs * 2 - 1 + jax.random.normal(noise_key, (128, 1)) * 0.5
    x, y = make_data(RegressionConfig())
    np.testing.assert_allclose(np.ravel(xs), x, rtol=1e-6)
    np.testing.assert_allclose(np.ravel(ys), y, rtol=1e-6)
    update = jax.jit(lambda p: jax.tree.map(lambda q, g: q - 0.005 * g, p, jax.grad(loss)(p, xs, ys)))
    params = init_params(key)
    for _ in range(1000):
        params = update(params)
    assert w == pytest.approx(float(params.weight), abs=1e-4) and b == pytest.approx(float(params.bias), abs=1e-4)


def test_logs_tags_progress_and_snapshots():
    cfg = RegressionConfig(steps=205, log_every=10)
    writer = MemoryWriter()
    (result,) = train(RegressionTask, cfg, writer)
    steps = [s for s, _ in writer.scalars]
    assert steps == [0, *range(10, 201, 10), 205]  # step 0: the initial loss; the 5-step remainder still runs
    assert writer.scalars[0][1] == {
        "train/loss": pytest.approx(float(loss(init_params(jax.random.key(42)), *make_data(cfg))))
    }
    assert all(set(d) == TAGS for _, d in writer.scalars[1:])
    assert set(result.final) == {"train/loss", "regression/weight", "regression/bias"}
    p = writer.progress[-1]
    assert (p.step, p.total_steps, p.epoch, p.total_epochs) == (205, 205, 0, 0)
    assert p.compile_seconds > 0 and p.steps_per_sec > 0 and p.wall_seconds >= p.compile_seconds
    snaps = [s for s, imgs in writer.images if tags.FIT_IMAGE in imgs]  # images: ~10 spread over the run
    assert snaps[0] == 0 and snaps[-1] == 205 and 10 <= len(snaps) <= 13 and snaps == sorted(set(snaps))
    live = [s for s, _ in curves(writer)]  # the page's curve: those, plus one every 0.5 s
    assert set(snaps) <= set(live) and live == sorted(set(live))
    data = writer.latest_table(tags.FIT_DATA)
    assert data.columns == ["x", "y"] and len(data.rows) == 128
    first, last = curves(writer)[0][1], curves(writer)[-1][1]
    assert first["y_true"] == pytest.approx([2.0 * v - 1.0 for v in first["x"]], rel=1e-6)
    w, bias = result.final["regression/weight"], result.final["regression/bias"]
    assert last["y"] == pytest.approx([w * v + bias for v in last["x"]], rel=1e-5)
    assert writer.scalars[-1][1]["regression/bias"] == result.final["regression/bias"]
    assert any(tags.FIT_IMAGE in imgs for _, imgs in writer.images)
    last_sys = writer.scalars[-1][1]
    assert 50 < last_sys["sys/rss_mb"] < 20_000 and 0 <= last_sys["sys/cpu_percent"] <= 100 * 64


def test_no_recompiles_across_chunks():
    (result,) = train(RegressionTask, RegressionConfig(steps=95, log_every=10))
    assert result.extra["traces"] == {"chunk[10]": 1, "chunk[5]": 1}


def test_an_unrolled_scan_gives_the_same_numbers_and_a_bad_unroll_names_its_variable(monkeypatch):
    cfg = RegressionConfig(steps=25, log_every=10, optimizer="adam", lr=0.02)
    (plain,) = train(RegressionTask, cfg)
    monkeypatch.setenv(UNROLL_ENV, "3")  # divides neither chunk length (10, 5): scan's remainder path too
    (unrolled,) = train(RegressionTask, cfg)
    assert unrolled.final == plain.final
    monkeypatch.setenv(UNROLL_ENV, "0")
    with pytest.raises(ValueError, match=r"\$JAXDASH_SCAN_UNROLL='0': give a positive whole number"):
        train(RegressionTask, cfg)


def test_step_is_pure_and_traced_once():
    """Eager calls run the Python body each time, so hidden Python state would show as differing outputs;
    the jitted call must equal them, and the input state must come back untouched."""
    task = RegressionTask(RegressionConfig())
    x, y = make_data(task.cfg)
    state = task.init(jax.random.key(0))
    before = jax.tree.map(np.array, state)
    eager1, eager2 = task.step(state, {"x": x, "y": y}), task.step(state, {"x": x, "y": y})
    step = jax.jit(chex.assert_max_traces(task.step, n=1))
    jitted = step(state, {"x": x, "y": y})
    step(state, {"x": x, "y": y})  # a second call must not retrace
    chex.assert_trees_all_close(eager1, eager2, rtol=0, atol=0)
    chex.assert_trees_all_close(eager1, jitted, rtol=1e-6)
    chex.assert_trees_all_equal(jax.tree.map(np.array, state), before)
    assert isinstance(jitted[0]["params"], Params) and set(jitted[1]) == {
        "loss",
        "regression/weight",
        "regression/bias",
    }


def test_adam_and_a_million_points():
    cfg = RegressionConfig(points=1_000_000, optimizer="adam", lr=0.05, steps=300, log_every=50)
    writer = MemoryWriter()
    (result,) = train(RegressionTask, cfg, writer)
    assert abs(result.final["regression/weight"] - 2.0) < 0.05 and abs(result.final["regression/bias"] + 1.0) < 0.05
    data = writer.latest_table(tags.FIT_DATA)
    assert len(data.rows) == 2000  # a deterministic subsample, written once
    assert sum(tags.FIT_DATA in t for _, t in writer.tables) == 1


def test_same_config_same_metrics():
    cfg = RegressionConfig(steps=100, optimizer="adam", lr=0.02)
    a, b = MemoryWriter(), MemoryWriter()
    ra, rb = train(RegressionTask, cfg, a)[0], train(RegressionTask, cfg, b)[0]

    def strip(w):
        return [(s, {k: v for k, v in d.items() if k.split("/")[0] not in ("perf", "sys")}) for s, d in w.scalars]

    assert strip(a) == strip(b) and ra.final == rb.final
    c = MemoryWriter()
    train(RegressionTask, RegressionConfig(steps=100, optimizer="adam", lr=0.02, seed=7), c)
    assert strip(c) != strip(a)


def test_stop_request_ends_after_the_current_chunk():
    calls = []
    writer = MemoryWriter()
    (result,) = train(
        RegressionTask, RegressionConfig(steps=1000, log_every=50), writer, lambda: calls.append(1) or len(calls) >= 3
    )
    assert result.state == "stopped" and result.steps == 150
    assert [s for s, _ in writer.scalars] == [0, 50, 100, 150] and curves(writer)[-1][0] == 150


def test_divergence_writes_the_chunk_then_names_the_first_bad_step():
    writer = FlushCounter()
    (result,) = train(RegressionTask, RegressionConfig(lr=10.0, log_every=10), writer)
    assert result.state == "diverged" and writer.closed[0] == "diverged"
    message = result.extra["message"]
    bad = int(message.split("at step ")[1].split(":")[0])
    last_step, last = writer.scalars[-1]
    assert last_step - 10 < bad <= last_step  # the bad step lies in the last written chunk
    assert not math.isfinite(last["train/loss"]) and all(math.isfinite(d["train/loss"]) for _, d in writer.scalars[:-1])
    assert writer.events[-2:] == [f"scalars@{last_step}", "flush"]
    assert "--lr 1" in message and f"step {bad}" in message
    # Replay the same steps by hand: the loss first goes non-finite exactly at `bad`.
    task = RegressionTask(RegressionConfig(lr=10.0))
    x, y = make_data(task.cfg)
    state = task.init(jax.random.key(task.cfg.seed))
    step = jax.jit(task.step)
    for i in range(1, bad + 1):
        state, m = step(state, {"x": x, "y": y})
        assert math.isfinite(float(m["loss"])) == (i < bad)
