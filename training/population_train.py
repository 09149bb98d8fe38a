"""K variants of a task trained at once: the single-run chunk, `jax.vmap`ped over a member axis.

Members differ in learning rate and seed only, so every array has the same shape and one
compiled chunk (a `lax.scan` inside one `jax.jit`) steps all of them. The learning rate is
optimizer state (`optax.inject_hyperparams`), so it is a vmapped value, not a constant baked
into the program. The host side mirrors `train_regression` / `train_mnist` member by member;
`Members` (training.population) fans the results out to each member's own writers and takes
a diverged member out of the reporting while the others go on. A member's checkpoint has the
single-run layout, so `python -m training resume <member dir>` continues it as a single run.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import traverse_util
from flax.training.train_state import TrainState

from training import mnist, regression
from training.config import MnistConfig, RegressionConfig
from training.data import CLASS_NAMES
from training.loop import ChunkCompiler, Clock, TraceCounter, chunk_lengths
from training.result import TrainResult
from training.sharding import AXIS, DataParallel, resolve_devices
from training.writers.base import Progress, RegressionSnapshot

if TYPE_CHECKING:
    from training.population import Members


def _lrs(cfgs: Sequence[Any]) -> jax.Array:
    return jnp.asarray([c.lr for c in cfgs], jnp.float32)


def _stack(trees: Sequence[Any]) -> Any:
    """One pytree with a leading member axis from K pytrees of the same structure."""
    return jax.tree.map(lambda *leaves: jnp.stack(leaves), *trees)


def _set_lr(opt_state: Any, lr: jax.Array) -> Any:
    """The member's learning rate into an `inject_hyperparams` state (the transformation's own is a placeholder)."""
    opt_state.hyperparams["learning_rate"] = lr
    return opt_state


def train_regression_population(
    cfgs: Sequence[RegressionConfig], members: Members, should_stop: Callable[[], bool] = lambda: False
) -> list[TrainResult]:
    """Fit K lines at once (same shapes; lr and seed vary). Logging as `train_regression`, per member."""
    cfg, k = cfgs[0], len(cfgs)
    clock, traces = Clock(), TraceCounter()
    optimizer = regression.make_optimizer(cfg)
    update = regression.make_update(optimizer)

    # Each member is initialised exactly as its single run is, then stacked: op by op this is fast
    # (every op is cached after the first member), while a jitted, vmapped init took ~3 s to compile.
    data = [regression.make_data(c) for c in cfgs]
    x, y = jnp.stack([d[0] for d in data]), jnp.stack([d[1] for d in data])
    params = _stack([regression.init(jax.random.key(c.seed)) for c in cfgs])
    state = (params, _set_lr(jax.vmap(optimizer.init)(params), _lrs(cfgs)))
    compiler = ChunkCompiler(lambda n: jax.vmap(regression.make_chunk(update, n)), traces)
    final_loss = jax.jit(traces.wrap("loss", jax.vmap(regression.loss)))
    samples = [regression._sample(cfg, x[i], y[i]) for i in range(k)]

    def snapshot(step: int, w: np.ndarray, b: np.ndarray) -> None:
        for i in members.alive():
            snap = RegressionSnapshot(*samples[i], float(w[i]), float(b[i]), cfg.true_weight, cfg.true_bias)
            members.writer(i).write_regression(step, snap)

    w, b = map(np.asarray, jax.device_get((state[0].weight, state[0].bias)))  # sync point: initial lines, once
    snapshot(0, w, b)
    plan = chunk_lengths(cfg.steps, cfg.log_every)
    snap_every = max(1, len(plan) // regression.SNAPSHOTS)
    step, stopped = 0, False
    for i, length in enumerate(plan):
        fn = compiler.get(length, state, x, y)
        state, m = clock.run_chunk(fn, length, state, x, y)
        first, step = step + 1, step + length
        w, b = m["weight"][:, -1], m["bias"][:, -1]
        scalars = [
            {"train/loss": float(m["loss"][j, -1]), "regression/weight": float(w[j]), "regression/bias": float(b[j])}
            for j in range(k)
        ]
        progress = Progress(step=step, total_steps=cfg.steps, wall_seconds=clock.elapsed(),
                            compile_seconds=compiler.compile_seconds, steps_per_sec=clock.steps_per_sec)
        members.report(step, scalars, progress, m["loss"], first)
        stopped = step < cfg.steps and should_stop()
        if (i + 1) % snap_every == 0 or i == len(plan) - 1 or stopped:
            snapshot(step, w, b)
        members.checkpoint(step, {"params": state[0], "opt_state": state[1]},
                           {"step": step, "wall_seconds": clock.elapsed()}, force=stopped or step == cfg.steps)
        if stopped or not members.alive():
            break
    losses = np.asarray(jax.device_get(final_loss(state[0], x, y)))  # sync point: final losses, once
    extra = {"compile_seconds": compiler.compile_seconds, "steps_per_sec": clock.steps_per_sec,
             "traces": dict(traces.counts), "wall_seconds": clock.elapsed(), "members": k}
    final = [{"train/loss": float(losses[j]), "regression/weight": float(w[j]), "regression/bias": float(b[j])} for j in range(k)]
    return [TrainResult("stopped" if stopped else "finished", final[j], step, extra) for j in range(k)]


def train_mnist_population(
    cfgs: Sequence[MnistConfig], members: Members, should_stop: Callable[[], bool] = lambda: False
) -> list[TrainResult]:
    """Train K MLPs at once on the same data (lr and seed vary). Logging as `train_mnist`, per member."""
    cfg, k = cfgs[0], len(cfgs)
    clock, traces = Clock(), TraceCounter()
    dp = DataParallel(resolve_devices(cfg.devices, cfg.batch_size))
    data = mnist.load_data(cfg, dp)
    spe, total_steps = data.steps_per_epoch, data.steps_per_epoch * cfg.epochs
    tx = mnist.make_tx(cfg.optimizer, cfg.lr)  # one optimizer for all: the members' lrs go into its state
    keys = [jax.random.split(jax.random.key(c.seed)) for c in cfgs]  # (init, shuffle) as train_mnist draws them
    params = _stack([mnist.init_params(cfg, init_key) for init_key, _ in keys])
    state = jax.vmap(lambda p: TrainState.create(apply_fn=mnist.MLP(tuple(cfg.hidden)).apply, params=p, tx=tx))(params)
    state = state.replace(opt_state=_set_lr(state.opt_state, _lrs(cfgs)))
    shuffle_keys = jnp.stack([jax.random.key_data(shuffle_key) for _, shuffle_key in keys])
    state = dp.replicate(state)
    compiler = ChunkCompiler(lambda n: jax.vmap(mnist.make_chunk(n, dp.constrain_batch), in_axes=(0, None, None, 0, None)), traces)
    permute = jax.jit(
        traces.wrap("permutation", jax.vmap(
            lambda kd, e: mnist._epoch_permutation(jax.random.wrap_key_data(kd), e, len(data.images), spe, cfg.batch_size),
            in_axes=(0, None))),
        out_shardings=dp.sharding(None, None, AXIS),
    )
    eval_fn = jax.jit(traces.wrap("evaluate", jax.vmap(lambda p, x, y: mnist.evaluate(state.apply_fn, p, x, y), in_axes=(0, None, None))))
    at = mnist.Position(next_eval=cfg.eval_every or None, loss_sum=np.zeros(k), acc_sum=np.zeros(k), test=[{}] * k)
    preds = None

    def run_eval() -> list[dict[str, float]]:
        nonlocal preds
        loss, acc, preds = eval_fn(state.params, data.test_images, data.test_labels)
        loss, acc = jax.device_get((loss, acc))  # sync point: 2K scalars per evaluation
        return [{"test/loss": float(loss[j]), "test/acc": float(acc[j])} for j in range(k)]

    def member_meta(j: int) -> dict[str, Any]:
        pos = {**asdict(at), "loss_sum": float(at.loss_sum[j]), "acc_sum": float(at.acc_sum[j]), "test": at.test[j]}
        return {"position": pos, "wall_seconds": clock.elapsed()}

    plan = chunk_lengths(spe, cfg.log_every)
    stopped, evaluated = False, False
    for epoch in range(1, cfg.epochs + 1):
        at.epoch, at.pos, at.loss_sum, at.acc_sum = epoch, 0, np.zeros(k), np.zeros(k)
        perm = permute(shuffle_keys, np.int32(epoch))
        for length in plan:
            args = (state, data.images, data.labels, perm, np.int32(at.pos))
            state, m = clock.run_chunk(compiler.get(length, *args), length, *args)
            first, at.pos, at.step = at.step + 1, at.pos + length, at.step + length
            at.loss_sum = at.loss_sum + m["loss"].sum(axis=1, dtype=np.float32).astype(np.float64)
            at.acc_sum = at.acc_sum + m["acc"].sum(axis=1, dtype=np.float32).astype(np.float64)
            scalars = [{"train/loss": float(m["loss"][j].mean()), "train/acc": float(m["acc"][j].mean()),
                        "perf/steps_per_sec": clock.steps_per_sec} for j in range(k)]
            epoch_end = at.pos == spe
            evaluated = epoch_end or (at.next_eval is not None and at.step >= at.next_eval)
            if evaluated:
                at.test = run_eval()
                for j in range(k):
                    scalars[j].update(at.test[j])
                if at.next_eval is not None:
                    at.next_eval = (at.step // cfg.eval_every + 1) * cfg.eval_every
            if epoch_end:
                for j in range(k):
                    scalars[j].update({"epoch/train_loss": at.loss_sum[j] / spe, "epoch/train_acc": at.acc_sum[j] / spe,
                                       "epoch/test_acc": at.test[j]["test/acc"]})
            progress = Progress(step=at.step, total_steps=total_steps, epoch=epoch, total_epochs=cfg.epochs,
                                wall_seconds=clock.elapsed(), compile_seconds=compiler.compile_seconds,
                                steps_per_sec=clock.steps_per_sec)
            members.report(at.step, scalars, progress, m["loss"], first)
            if epoch_end:
                flat = traverse_util.flatten_dict(jax.device_get(state.params), sep="/")  # sync point: once per epoch
                for j in members.alive():
                    members.writer(j).write_histograms(at.step, {f"params/{n}": np.asarray(v[j]) for n, v in flat.items()})
            stopped = at.step < total_steps and should_stop()
            members.checkpoint(
                at.step, {"train_state": state, "shuffle_key": shuffle_keys}, member_meta,
                force=stopped or at.step == total_steps,
            )
            if stopped or not members.alive():
                break
        if stopped or not members.alive():
            break
    if not evaluated:
        at.test = run_eval()
    preds = np.asarray(jax.device_get(preds))  # sync point: test predictions, once at the end
    extra = {"compile_seconds": compiler.compile_seconds, "steps_per_sec": clock.steps_per_sec,
             "traces": dict(traces.counts), "wall_seconds": clock.elapsed(), "members": k, "devices": dp.count}
    results = []
    for j in range(k):
        if j in members.alive():
            members.writer(j).write_classification(at.step, mnist._report(CLASS_NAMES[cfg.dataset], data.test_x, data.test_y, preds[j]))
        final = {"train/loss": float(at.loss_sum[j] / at.pos), "train/acc": float(at.acc_sum[j] / at.pos), **at.test[j]}
        results.append(TrainResult("stopped" if stopped else "finished", final, at.step, extra))
    return results

