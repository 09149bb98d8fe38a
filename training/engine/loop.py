"""The one training loop: any Task, K members (K = 1 is a single run), chunks of `lax.scan`.

Read top to bottom: set up data and state, then per chunk
  run K steps on the device (one jitted call, state donated)      -> metrics leave the device once
  reduce metrics per member, evaluate when due, write, check divergence
  snapshot / histograms / stop / checkpoint when their schedule says so
and finally evaluate and summarise. Nothing inside jit logs or touches the host. The next chunk
(of this epoch or the next) is dispatched before the chunk's writes (JAX returns at once), so the
device computes while the host writes; when something due reads the chunk's state (evaluation,
histograms, snapshot, checkpoint) it reads a device copy taken first, as the next chunk donates
the state. Only PBT, a stop or a diverged member make the next chunk wait.
A population stacks its members' states on a leading axis and `jax.vmap`s the same chunk: members
differ in learning rate (held in the optimizer state) and seed only, so one program fits all.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from concurrent.futures import Future
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from runstore import tags
from runwriters.base import Progress
from training.engine import distributed
from training.engine.chunks import (
    ChunkCompiler,
    Clock,
    Launched,
    TraceCounter,
    check_scalar_metrics,
    chunk_plan,
    compile_ahead,
    scan_unroll,
)
from training.engine.data_reads import load_members_data
from training.engine.inits import init_states
from training.engine.members import Members, first_nonfinite, stack, take
from training.engine.pbt import Exploiter, PbtConfig, learning_rates
from training.engine.position import Plan, Position, data_for, param_arrays, reduce_chunk
from training.engine.result import TrainResult
from training.engine.schedule import Due, Periods, Schedules
from training.engine.sharding import AXIS, DataParallel, resolve_devices
from training.engine.system import SystemMetrics
from training.errors import TrainingError
from training.tasks.base import Task
from training.tasks.summaries import write_summaries

EVALS_PER_RUN = 20  # a full-batch task with `evaluate` (no epochs to evaluate at): a test curve while it trains
SNAPSHOTS = 10  # task summaries spread over a run, besides the first and the last
CKPT_SECS = 30.0  # a checkpoint at least this often, whatever --ckpt-every says
LIVE_FIT_SECS = 0.5  # the page's fitted curve (a table only, no images) at least this often
HOLD_MAX_BYTES = 1 << 30  # a larger state is not copied to overlap the epoch-end work: the next chunk waits


def _finite(losses: Any) -> bool:
    """True when a chunk's losses (or no losses at all) are all finite: no member diverged in it."""
    return losses is None or first_nonfinite(np.ravel(losses)) is None  # the members' own divergence test


class Engine:
    """Trains `cfgs` (one per member, same shapes) of one task class into `members`' writers.

    Args:
      task_cls: the Task subclass.
      cfgs: validated configs, one per member.
      members: the members' run dirs, writers and checkpointers, in the same order.
      should_stop: polled between chunks; True stops every member after the chunk. When it has
        `observe(step, scalars)` (a sweep's pruner, `training.sweep.trials.TrialStop`), that sees each
        chunk's train scalars first, so a stop it decides lands at the step it judged; its `ended_as`
        (default "stopped") is the state a run it stopped ends in.
    """

    def __init__(
        self,
        task_cls: type[Task],
        cfgs: Sequence[Any],
        members: Members,
        should_stop: Any,
        pbt: PbtConfig | None = None,
    ):
        self.pbt = pbt
        self.tasks = [task_cls(c) for c in cfgs]
        self.task, self.cfg, self.k = self.tasks[0], cfgs[0], len(cfgs)
        self.stacked = self.k > 1  # a single run keeps unbatched shapes (the fastest kernels)
        self.members, self.should_stop = members, should_stop
        self.clock, self.traces = Clock(), TraceCounter()
        self.system = SystemMetrics()

    # ---- setup: data on the devices, initial (or restored) state ---------------------------------------
    def _setup(self) -> None:
        self.members.set_phase("loading data")
        batch = getattr(self.cfg, "batch_size", None)
        self.dp = DataParallel(resolve_devices(getattr(self.cfg, "devices", 1), batch or 1))
        self.data, per_member = load_members_data(self.tasks, self.stacked)
        self.per_member = per_member
        place = (lambda trees: stack(trees)) if per_member else (lambda trees: jax.tree.map(jnp.asarray, trees[0]))
        self.train = self.dp.replicate(place([d.train for d in self.data]))  # host->device copy, once
        has_test = self.data[0].test is not None and self.task.has_evaluate()
        self.test = self.dp.replicate(place([d.test for d in self.data])) if has_test else None
        n_train = len(jax.tree.leaves(self.data[0].train)[0])
        self.plan = Plan.of(self.cfg, n_train)
        keys = [jax.random.key(c.seed) for c in (t.cfg for t in self.tasks)]
        # Jitted inits (kept by the persistent compilation cache: ~0.1 s from the second run on, vs ~1.3 s
        # of op-by-op compiles), one compiled program for all members whose init traces alike.
        states = init_states(self.tasks, keys)
        if len({jax.tree.structure(s) for s in states}) > 1:
            raise TrainingError("The members' states differ in structure; a population may only vary lr and seed.")
        shuffle = [jax.random.key_data(jax.random.split(key)[1]) for key in keys]  # (init, shuffle) = split(key)
        self.state = self.dp.replicate(stack(states) if self.stacked else states[0])
        self.shuffle = self.dp.replicate(stack(shuffle) if self.stacked else shuffle[0])
        self.can_hold = sum(leaf.nbytes for leaf in jax.tree.leaves(self.state)) <= HOLD_MAX_BYTES

    def _restore(self, step: int) -> Position:
        """Each member's checkpoint at `step`, restacked; the loop's position from their meta."""
        states, shuffles, metas = [], [], []
        for i, member in enumerate(self.members.members):
            like = {"state": take(self.state, i, self.stacked), "shuffle_key": take(self.shuffle, i, self.stacked)}
            arrays, meta = member.ckpt.restore(like, step)
            states.append(arrays["state"])
            shuffles.append(arrays["shuffle_key"])
            metas.append(meta)
        self.state = self.dp.replicate(stack(states) if self.stacked else states[0])
        self.shuffle = self.dp.replicate(stack(shuffles) if self.stacked else shuffles[0])
        self.clock.start -= metas[0]["wall_seconds"]  # wall time continues where the checkpoint left it
        return Position.from_meta([m["position"] for m in metas])

    # ---- compiled pieces -----------------------------------------------------------------------------
    def _compile(self) -> None:
        step_fn, batched, constrain = self.task.step, self.plan.batched, self.dp.constrain_batch
        unroll = scan_unroll()

        def make_chunk(length: int) -> Any:
            def chunk(state: Any, train: Any, perm: Any, start: Any) -> Any:
                steps_per_iteration = min(unroll, length)
                if not batched:  # full batch: every step sees the whole training set
                    return jax.lax.scan(
                        lambda s, _: step_fn(s, train), state, None, length=length, unroll=steps_per_iteration
                    )
                idx = jax.lax.dynamic_slice_in_dim(perm, start, length)  # [length, batch]; start is traced

                def body(s: Any, batch_idx: Any) -> Any:
                    return step_fn(s, constrain(jax.tree.map(lambda a: a[batch_idx], train)))

                return jax.lax.scan(body, state, idx, unroll=steps_per_iteration)

            if not self.stacked:
                return chunk
            data_axis = 0 if self.per_member else None
            return jax.vmap(chunk, in_axes=(0, data_axis, 0 if batched else None, None))

        self.compiler = ChunkCompiler(make_chunk, self.traces)
        n, spe, bs = len(jax.tree.leaves(self.train)[0]), self.plan.steps_per_epoch, self.plan.batch_size

        def permutation(key_data: Any, epoch: Any) -> Any:
            key = jax.random.fold_in(jax.random.wrap_key_data(key_data), epoch)
            return jax.random.permutation(key, n)[: spe * bs].reshape(spe, bs)

        spec = (None, None, AXIS) if self.stacked else (None, AXIS)  # each device holds its share of every batch
        permute = jax.vmap(permutation, in_axes=(0, None)) if self.stacked else permutation
        self.permute = jax.jit(self.traces.wrap("permutation", permute), out_shardings=self.dp.sharding(*spec))
        if self.test is not None:
            evaluate = self.task.evaluate
            if self.stacked:
                evaluate = jax.vmap(evaluate, in_axes=(0, 0 if self.per_member else None))
            self.eval_fn = jax.jit(self.traces.wrap("evaluate", evaluate))
        self.evaluate_ahead: Future | None = None  # eval_fn compiled while the first chunk runs
        self.hold: Any = jax.jit(lambda state: jax.tree.map(jnp.copy, state))  # a device copy: the next chunk donates
        self.hold_ahead: Future | None = None  # hold compiled while the first chunk runs
        self.perms: dict[int, Any] = {}  # epoch -> its permutation (this epoch's and, dispatched early, the next)

    # ---- the loop ------------------------------------------------------------------------------------
    def run(self, resume_step: int | None = None) -> list[TrainResult]:
        """Train to the end, a stop request, or until every member diverged; one result per member."""
        self._setup()
        pos = self._restore(resume_step) if resume_step is not None else Position.start(self.k)
        self._compile()
        self.members.set_phase("compiling")
        cfg = self.cfg
        self._setup_pbt()
        self.schedules = Schedules(self.plan.total_steps, pos.step, self._periods())
        if pos.step == 0:
            self._snapshot(0, final=False, first=True)
        todo = chunk_plan(pos.epoch, pos.pos, self.plan.steps_per_epoch, cfg.log_every, self.plan.epochs)
        stopped, launched = False, None  # launched: the next chunk, when dispatched before this chunk's writes
        for i, (epoch, start, length) in enumerate(todo):
            pos.begin_epoch(epoch)
            launched = launched or self._launch(epoch, start, length)
            following = todo[i + 1] if i + 1 < len(todo) else None
            stopped, launched = self._chunk(launched, pos, following)
            if stopped or not self.members.alive():
                break
        return self._finish(pos, stopped)

    def _perm(self, epoch: int) -> Any:
        """The epoch's batch order on the device (None for a full-batch task), dispatched once per epoch."""
        if not self.plan.batched:
            return None
        if epoch not in self.perms:
            self.perms = {e: p for e, p in self.perms.items() if e >= epoch - 1}  # this epoch's and the next
            self.perms[epoch] = self.permute(self.shuffle, np.int32(epoch))
        return self.perms[epoch]

    def _launch(self, epoch: int, start: int, length: int) -> Launched:
        """Dispatch the chunk of `length` steps from `start` in `epoch`; the device computes while we go on."""
        args = (self.state, self.train, self._perm(epoch), np.int32(start))  # only this scalar goes host->device
        fn = self.compiler.get(length, *args)
        launched = self.clock.launch(fn, length, *args, dispatched=lambda state: self._compile_ahead(state, args[1:]))
        self.state = launched.state  # the old state was donated
        return launched

    def _chunk(self, launched: Launched, pos: Position, following: tuple[int, int, int] | None) -> tuple[bool, Any]:
        """Land one chunk and do everything due after it; returns (stop requested?, the next chunk if launched).

        The following chunk (epoch, start, length) is dispatched before this chunk's writes, so the
        writers' ~10 ms a chunk, and at an epoch's end its evaluation, histograms and checkpoint
        (~90 ms for MNIST), overlap the device's work instead of following it. What reads this
        chunk's state then reads `held`, a device copy taken before the next chunk donates it. A
        PBT step, a stop or a non-finite loss (or a state over HOLD_MAX_BYTES that something due
        reads) make the next chunk wait.
        """
        length, started = launched.length, launched.t0 - self.clock.start  # wall time when it was dispatched
        self.state, metrics = self.clock.land(launched)
        if not self.stacked:
            metrics = jax.tree.map(lambda a: np.asarray(a)[None], metrics)
        check_scalar_metrics(metrics)
        first = pos.step + 1
        pos.advance(length, metrics)
        epoch_end = pos.pos == self.plan.steps_per_epoch
        scalars = [reduce_chunk(metrics, i, self.task.last_value) for i in range(self.k)]
        observe = getattr(self.should_stop, "observe", None)
        if observe is not None:  # before the poll below: a pruner's verdict on this step stops the run here
            observe(pos.step, scalars)
        due = self.schedules.after_chunk(
            pos.step, epoch_end, self.plan.batched, self.should_stop, self.test is not None, "fit" in self.task.panels
        )
        due = Due(*distributed.agreed(dataclasses.astuple(due)))  # a job's processes all do process 0's
        reads = due.needs_state or (epoch_end and self.plan.batched)  # histograms at an epoch's end
        ahead, held, tested = None, self.state, None
        if (
            following is not None
            and not (due.pbt or due.stopped)
            and (self.can_hold or not reads)
            and _finite(metrics.get("loss"))
        ):
            if reads:
                if self.hold_ahead is not None:
                    self.hold, self.hold_ahead = self.hold_ahead.result(), None
                held = self.hold(self.state)  # dispatched before the next chunk, which donates the state
            if due.evaluate:
                tested = self._evaluate_start(held)  # ahead of the next chunk on the device
            ahead = self._launch(*following)  # state donated: below, only `held` is read
        if first == 1:  # after the dispatch: the writers' first records (files opened) overlap the device's work
            self._log_step_zero(metrics, started)
        if due.evaluate:
            pos.test = self._evaluate_end(tested if tested is not None else self._evaluate_start(held))
            pos.evaluated_at = pos.step
            for i in range(self.k):
                scalars[i].update(pos.test[i])
        system = self.system.sample()  # one process trains every member: the same figures for each
        for i in range(self.k):
            scalars[i][tags.STEPS_PER_SEC] = self.clock.steps_per_sec
            scalars[i].update(system)
            if self.pbt is not None:
                scalars[i][tags.PBT_LR] = float(self.lrs[i])
            if epoch_end and self.plan.batched:
                scalars[i].update(pos.epoch_means(i))
        diverged = self.members.report(
            pos.step, scalars, self._progress(pos), metrics.get("loss"), first, rescue=self.pbt is not None
        )
        pos.last = scalars
        if self.pbt is not None and (due.pbt or diverged):
            self.state, self.lrs, copies = self.exploiter(self.state, self.lrs, pos.step, scalars, diverged)
            self.exploiter.record(pos.step, copies, pos.lineage, [m.writer for m in self.members.members])
        if epoch_end and self.plan.batched:
            self._histograms(pos.step, held)
        if due.snapshot or due.live_fit:
            self._snapshot(pos.step, final=False, images=due.snapshot, state=held)
        if due.checkpoint:
            self.members.checkpoint(
                pos.step,
                {"state": held, "shuffle_key": self.shuffle},
                lambda i: {"position": pos.meta(i), "wall_seconds": self.clock.elapsed()},
                self.stacked,
            )
        return due.stopped, ahead

    def _compile_ahead(self, state: Any, data: tuple[Any, ...]) -> None:
        """While the device runs a chunk: compile what the epoch's end needs (its shorter last chunk, evaluate, hold)."""
        rest = self.plan.steps_per_epoch % self.cfg.log_every  # the length of an epoch's shorter last chunk
        if rest:
            self.compiler.compile_ahead(rest, state, *data)
        if self.test is not None and self.evaluate_ahead is None:
            self.evaluate_ahead = compile_ahead(self.eval_fn, state, self.test)
        if self.can_hold and self.hold_ahead is None and not isinstance(self.hold, jax.stages.Compiled):
            self.hold_ahead = compile_ahead(self.hold, state)

    def _log_step_zero(self, metrics: Any, wall: float) -> None:
        """A record at step 0: the loss (and accuracy) of the initial params, which the first step saw.

        A run of a few chunks then still shows its descent from the start. Metrics with a group of
        their own (e.g. "regression/weight") describe the state after a step and are left out.
        """
        for i in self.members.alive():
            initial = {tags.metric_tag(tags.TRAIN, n): float(v[i][0]) for n, v in metrics.items() if "/" not in n}
            progress = Progress(
                step=0,
                total_steps=self.plan.total_steps,
                epoch=0,  # before the first epoch: W&B's `epoch` axis starts at 0 on this row
                total_epochs=self.plan.epochs if self.plan.batched else 0,
                wall_seconds=wall,
                phase="training",
            )
            self.members.writer(i).write_scalars(0, initial, progress)

    def _periods(self) -> Periods:
        """How often this run evaluates, checkpoints, exploits (PBT) and writes its task summaries."""
        cfg = self.cfg
        evals = getattr(cfg, "eval_every", 0) or (0 if self.plan.batched else self.plan.total_steps // EVALS_PER_RUN)
        pbt = self.pbt.interval if self.pbt is not None else None
        return Periods(evals, getattr(cfg, "ckpt_every", 0), pbt, SNAPSHOTS, CKPT_SECS, LIVE_FIT_SECS)

    def _setup_pbt(self) -> None:
        """PBT's ranking metric and the members' current learning rates (from the state)."""
        if self.pbt is None:
            return
        self.pbt.validate(self.k)
        metric = self.pbt.metric or (tags.TEST_LOSS if self.test is not None else tags.TRAIN_LOSS)
        self.exploiter = Exploiter(self.pbt, metric)
        self.lrs = learning_rates(self.state)

    def _progress(self, pos: Position) -> Progress:
        return Progress(
            step=pos.step,
            total_steps=self.plan.total_steps,
            epoch=pos.epoch if self.plan.batched else 0,
            total_epochs=self.plan.epochs if self.plan.batched else 0,
            wall_seconds=self.clock.elapsed(),
            compile_seconds=self.compiler.compile_seconds,
            steps_per_sec=self.clock.steps_per_sec,
            phase="training",
        )

    def _evaluate_start(self, state: Any) -> Any:
        """Dispatch the test evaluation of `state` (device futures)."""
        evaluate = self.evaluate_ahead.result() if self.evaluate_ahead is not None else self.eval_fn
        return evaluate(state, self.test)

    def _evaluate_end(self, tested: Any) -> list[dict[str, float]]:
        """Each member's test metrics from `_evaluate_start`'s futures."""
        out = jax.device_get(tested)  # sync point: a few scalars per evaluation
        if not self.stacked:
            out = {k: np.asarray(v)[None] for k, v in out.items()}
        return [{tags.metric_tag(tags.TEST, k): float(v[i]) for k, v in out.items()} for i in range(self.k)]

    def _histograms(self, step: int, state: Any) -> None:
        params = state.get("params") if isinstance(state, dict) else None
        if params is None:
            return
        host = jax.device_get(params)  # sync point: once per epoch
        for i in self.members.alive():
            arrays = param_arrays(take(host, i, self.stacked))
            self.members.writer(i).write_histograms(step, {f"params/{k}": v for k, v in arrays.items()})

    def _snapshot(self, step: int, final: bool, first: bool = False, images: bool = True, state: Any = None) -> None:
        for i in self.members.alive():
            member_state = take(self.state if state is None else state, i, self.stacked)
            summaries = self.tasks[i].summarize(member_state, data_for(self.data, i), final)
            write_summaries(self.members.writer(i), step, summaries, first, images)

    def _finish(self, pos: Position, stopped: bool) -> list[TrainResult]:
        if self.test is not None and pos.evaluated_at != pos.step and self.members.alive():
            pos.test = self._evaluate_end(self._evaluate_start(self.state))  # stopped between evaluations
        self._snapshot(pos.step, final=True)
        extra = {
            "compile_seconds": self.compiler.compile_seconds,
            "steps_per_sec": self.clock.steps_per_sec,
            "traces": dict(self.traces.counts),
            "wall_seconds": self.clock.elapsed(),
            "members": self.k,
            "devices": self.dp.count,
        }
        ended = getattr(self.should_stop, "ended_as", "stopped") if stopped else "finished"
        states = [m.state if m.state != "running" else ended for m in self.members.members]
        return [
            TrainResult(
                states[i],
                pos.final(i, self.plan.batched),
                pos.step,
                {**extra, "message": m.message, "final_basis": pos.final_basis(i, self.plan.batched)},
            )
            for i, m in enumerate(self.members.members)
        ]
