"""A population's setup compiles per program, not per member or per array.

Its members differ only in lr and seed, so their initial states come from one compiled init, and
stacking or slicing their states is one compiled call per tree shape. `test_population.py` shows
the numbers are a single run's; these show the programs are shared (sweep_queue's trial time).
"""

from __future__ import annotations

import dataclasses
import logging

import jax
import numpy as np
import pytest

from training.engine.inits import init_states
from training.engine.members import stack, take
from training.tasks.regression import RegressionConfig, RegressionTask


class CountingTask(RegressionTask):
    """Regression, counting how often its `init` runs in Python (once per trace when jitted)."""

    init_calls = 0

    def init(self, key):
        type(self).init_calls += 1
        return super().init(key)


class LrBranchingTask(CountingTask):
    """A task whose constructor looks at the lr's value: it cannot be built with a traced lr."""

    def __init__(self, cfg):
        super().__init__(cfg)
        if cfg.lr > 0.01:  # a Python branch on a traced lr raises; this task is set up member by member
            self.warm_up = True


def members(task_cls, lrs_seeds):
    cfgs = [dataclasses.replace(RegressionConfig(steps=10), lr=lr, seed=seed) for lr, seed in lrs_seeds]
    return [task_cls(c) for c in cfgs], [jax.random.key(c.seed) for c in cfgs]


def assert_same_states(got, expected):
    for a, b in zip(got, expected, strict=True):
        assert jax.tree.structure(a) == jax.tree.structure(b)
        for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
            assert x.dtype == y.dtype and np.array_equal(x, y)


@pytest.mark.parametrize("task_cls, traces", [(CountingTask, 1), (LrBranchingTask, 4)])
def test_members_that_differ_in_lr_and_seed_share_one_init(task_cls, traces):
    tasks, keys = members(task_cls, [(0.005, 0), (0.05, 1), (0.005, 2), (0.1, 3)])
    expected = [t.init(k) for t, k in zip(tasks, keys, strict=True)]  # each member's own init, op by op
    task_cls.init_calls = 0
    states = init_states(tasks, keys)
    assert task_cls.init_calls == traces  # one traced program for all, or member by member when lr is branched on
    assert_same_states(states, expected)
    assert [float(s["opt_state"].hyperparams["learning_rate"]) for s in states] == pytest.approx(
        [0.005, 0.05, 0.005, 0.1]
    )


def test_members_with_other_differences_are_initialised_one_by_one():
    cfgs = [RegressionConfig(steps=10, points=64, lr=0.01), RegressionConfig(steps=10, points=32, lr=0.02)]
    tasks, keys = [CountingTask(c) for c in cfgs], [jax.random.key(0)] * 2
    CountingTask.init_calls = 0
    init_states(tasks, keys)
    assert CountingTask.init_calls == 2


def test_stacking_and_slicing_members_compiles_once_per_tree_shape(caplog):
    trees = [{"w": np.full((3, 5), i, np.float32), "b": np.full(5, i, np.float32), "n": np.int32(i)} for i in range(3)]
    with jax.log_compiles(True), caplog.at_level(logging.WARNING, logger="jax"):
        stacked = stack(trees)
        parts = [take(stacked, i, stacked=True) for i in range(3)]
    compiles = [r for r in caplog.records if "Finished XLA compilation" in r.getMessage()]
    assert len(compiles) == 2  # one stack, one take for all three members (op by op: a compile per leaf and index)
    for i, part in enumerate(parts):
        assert float(part["w"][0, 0]) == i and float(part["b"][4]) == i and int(part["n"]) == i
    host = jax.device_get(stacked)
    assert isinstance(take(host, 2, stacked=True)["w"], np.ndarray)  # host trees stay on the host


def test_the_epochs_last_chunk_compiles_on_its_own_thread_from_shapes_alone():
    """compile_ahead works from the arguments' shapes: the state may be donated before it runs."""
    import threading

    from training.engine.chunks import ChunkCompiler, TraceCounter

    traced_on = []

    def make_chunk(length):
        def chunk(state, data):
            traced_on.append(threading.current_thread().name)
            return jax.lax.scan(lambda s, x: (s + x, s.sum()), state, data[:length])

        return chunk

    compiler = ChunkCompiler(make_chunk, TraceCounter())
    state, data = jax.numpy.zeros(3), jax.numpy.ones((5, 3))
    first = compiler.get(5, state, data)
    state, _ = first(state, data)  # donated: the old state is gone
    compiler.compile_ahead(2, state, data)
    state, sums = first(state, data)  # the state compile_ahead saw is donated while it compiles
    rest = compiler.get(2, state, data)
    state, sums = rest(state, data)
    assert np.allclose(np.asarray(state), 12.0) and np.allclose(np.asarray(sums), [30.0, 33.0])
    assert traced_on[0] == threading.main_thread().name and traced_on[1].startswith("compile-ahead")
    assert compiler.traces.counts == {"chunk[5]": 1, "chunk[2]": 1} and compiler.compile_seconds > 0


def test_evaluation_compiles_while_the_first_chunk_runs(tmp_path):
    """The epoch end's programs (the shorter last chunk, the evaluation) are traced on the compile-ahead thread."""
    import threading

    from tests.test_data import write_idx_dataset
    from training.runs.in_memory import train
    from training.tasks.mnist import MnistConfig, MnistTask

    traced_on = []

    class Watched(MnistTask):
        def evaluate(self, state, test):
            traced_on.append(threading.current_thread().name)
            return super().evaluate(state, test)

    write_idx_dataset(tmp_path, n_train=200, n_test=50, seed=1)
    base = MnistConfig(data_dir=str(tmp_path), epochs=2, batch_size=16, log_every=5, hidden=(8,))
    results = train(Watched, [dataclasses.replace(base, lr=lr) for lr in (0.01, 0.02)])
    assert [r.state for r in results] == ["finished", "finished"] and "test/acc" in results[0].final
    assert traced_on and all(name.startswith("compile-ahead") for name in traced_on), traced_on
    assert results[0].extra["traces"]["evaluate"] == 1 and results[0].extra["traces"]["chunk[2]"] == 1
