"""Populations: K runs of one task over a grid of learning rates and/or seeds, trained by one program.

    python -m training regression --population lr=0.001,0.005,0.02 --population seed=0,1

trains the 6 combinations (the cartesian product) together (training.population_train). Each
member is an ordinary run directory - own config.json (its own lr/seed plus top-level "group"
and "member"), status.json (also with "group" and "member"), metrics.jsonl, tb/, W&B run (in
W&B group <group id>) and ckpt/ - so the dashboard, TensorBoard and `resume` treat it like any
run. Lifecycle per member is run.py's; a diverged member ends alone, the others go on; a stop
file in any member's directory, or SIGTERM/SIGINT, stops the whole group after the chunk.
"""

from __future__ import annotations

import itertools
import secrets
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import jax
import numpy as np

from training import run_store
from training.checkpoint import Checkpointer
from training.config import Config, ConfigError, config_to_dict, parse_config
from training.errors import Diverged
from training.loop import report_chunk
from training.result import TrainResult
from training.run import StopFlag, close_run, failure, open_writer
from training.writers.base import MetricWriter, Progress

VARIED = ("lr", "seed")  # fields that change values only, never shapes: one compiled program fits all


def parse_axes(specs: Sequence[str]) -> dict[str, list[str]]:
    """["lr=0.001,0.005", "seed=0,1"] -> {"lr": ["0.001", "0.005"], "seed": ["0", "1"]}.

    Raises:
      ConfigError: a malformed spec, a field that cannot vary, or a field given twice.
    """
    axes: dict[str, list[str]] = {}
    for spec in specs:
        name, sep, values = spec.partition("=")
        name = name.strip().replace("-", "_")
        listed = [v.strip() for v in values.split(",") if v.strip()]
        if not sep or not listed:
            raise ConfigError({"population": f"expects FIELD=V1,V2,... (got {spec!r}), e.g. --population lr=0.001,0.01."})
        if name not in VARIED:
            raise ConfigError({"population": f"can vary {' and '.join(VARIED)} only (got {name!r}); other settings change "
                                             "array shapes or data, so train them as separate runs."})
        if name in axes:
            raise ConfigError({"population": f"{name} is given twice; list all its values in one --population {name}=..."})
        axes[name] = listed
    return axes


def member_configs(task: str, raw: Mapping[str, Any], axes: Mapping[str, Sequence[str]]) -> list[Config]:
    """One validated config per combination of the axes' values (cartesian product, in order)."""
    cfgs, errors = [], {}
    for combo in itertools.product(*axes.values()):
        try:
            cfgs.append(parse_config(task, {**raw, **dict(zip(axes, combo, strict=True))}))
        except ConfigError as exc:
            errors.update(exc.errors)
    if errors:
        raise ConfigError(errors)
    return cfgs


class GroupStop(StopFlag):
    """True once SIGTERM/SIGINT arrived or any member's directory holds a `stop` file."""

    def __init__(self, run_dirs: Sequence[Path]):
        super().__init__(run_dirs[0])
        self.run_dirs = list(run_dirs)

    def __call__(self) -> bool:
        return self.signalled or any(run_store.stop_requested(d) for d in self.run_dirs)


class Members:
    """The members' writers (and run dirs, checkpointers); a diverged member is taken out of reporting.

    Args:
      writers: one writer per member.
      lrs: each member's learning rate (for the Diverged hint).
      run_dirs: when given, a member taken out is closed like a run (status.json, final state).
      ckpts: one Checkpointer (or None) per member.
    """

    def __init__(self, writers: Sequence[MetricWriter], lrs: Sequence[float],
                 run_dirs: Sequence[Path] | None = None, ckpts: Sequence[Checkpointer | None] | None = None):
        self.writers, self.lrs = list(writers), list(lrs)
        self.run_dirs = list(run_dirs) if run_dirs is not None else None
        self.ckpts = list(ckpts) if ckpts is not None else [None] * len(self.writers)
        self.states: list[str] = ["running"] * len(self.writers)
        self.messages: list[str | None] = [None] * len(self.writers)

    def alive(self) -> list[int]:
        """Indices of the members still training."""
        return [i for i, s in enumerate(self.states) if s == "running"]

    def writer(self, i: int) -> MetricWriter:
        return self.writers[i]

    def report(self, step: int, scalars: Sequence[Mapping[str, float]], progress: Progress, losses: np.ndarray, first: int) -> None:
        """Write each live member's chunk; a member whose loss went non-finite ends as diverged."""
        for i in self.alive():
            try:
                report_chunk(self.writers[i], step, scalars[i], progress, losses[i], first, self.lrs[i])
            except Diverged as exc:
                self.end(i, "diverged", str(exc))

    def checkpoint(self, step: int, arrays: Any, meta: Mapping[str, Any] | Callable[[int], Mapping[str, Any]], force: bool) -> None:
        """Checkpoint each live member that is due (or all with `force`) in the single-run layout.

        Args:
          arrays: pytree whose leaves are stacked over members; member i saves its slice [i].
          meta: the JSON meta shared by all members, or member index -> its meta.
        """
        for i in self.alive():
            ckpt = self.ckpts[i]
            if ckpt is not None and (force or ckpt.due(step)):
                ckpt.save(step, jax.tree.map(lambda a: a[i], arrays), meta(i) if callable(meta) else meta)  # noqa: B023 - used at once

    def end(self, i: int, state: str, message: str | None = None, final: Mapping[str, float] | None = None) -> None:
        """Finish member i: its checkpointer, writers and (with run dirs) its status.json."""
        self.states[i], self.messages[i] = state, message
        ckpt, self.ckpts[i] = self.ckpts[i], None
        try:
            if ckpt is not None:
                ckpt.close()
        finally:
            if self.run_dirs is not None:
                close_run(self.run_dirs[i], self.writers[i], state, message, dict(final or {}))
            else:
                self.writers[i].close(state, message)


def _label(cfg: Config, axes: Sequence[str]) -> str:
    return " ".join(f"{a}={getattr(cfg, a):g}" for a in axes)


def execute_population(
    cfgs: Sequence[Config],
    axes: Sequence[str] = VARIED,
    root: str | Path | None = None,
    name: str | None = None,
    wandb_mode: str = "auto",
    tensorboard: bool = True,
    console: bool = True,
    command: list[str] | None = None,
) -> list[tuple[Path, str, TrainResult | None]]:
    """Train `cfgs` (same task and shapes, different lr/seed) as one population of runs.

    Args:
      cfgs: the members' validated configs (see `member_configs`).
      axes: the varied fields, for the members' display names.
      root: runs root (default $JAXDASH_RUNS or ./runs); each member gets a new run dir there.
      name: display name prefix; also the group id's slug.
      wandb_mode, tensorboard, console: as `training.run.execute` (console: member 0's progress bar).
      command: the command line, saved in each config.json.

    Returns:
      [(run_dir, final state, result or None)] per member, in order.
    """
    from training.population_train import train_mnist_population, train_regression_population

    task = cfgs[0].task
    group = f"{time.strftime('%Y%m%d-%H%M%S')}-{run_store.slugify(name or task)}-pop-{secrets.token_hex(2)}"
    dirs, names = [], []
    for i, cfg in enumerate(cfgs):
        run_dir = run_store.new_run_dir(root, task, f"{name or task}-m{i}")
        names.append(f"{name or group} #{i} ({_label(cfg, axes)})")
        run_store.write_config(run_dir, task, config_to_dict(cfg), name=names[-1], command=command, group=group, member=i)
        run_store.start_status(run_dir, total_steps=cfg.total_steps, epoch=0, total_epochs=getattr(cfg, "epochs", 0),
                               group=group, member=i)
        dirs.append(run_dir)
    stop = GroupStop(dirs)
    stop.install()
    writers = [open_writer(c, d, n, wandb_mode, tensorboard, console and i == 0, group=group)
               for i, (c, d, n) in enumerate(zip(cfgs, dirs, names, strict=True))]
    members = Members(writers, [c.lr for c in cfgs], dirs, [Checkpointer(d, c.ckpt_every) for c, d in zip(cfgs, dirs, strict=True)])
    train = train_regression_population if task == "regression" else train_mnist_population
    results: list[TrainResult | None] = [None] * len(cfgs)
    try:
        trained = train(cfgs, members, stop)
        for i in members.alive():
            results[i] = trained[i]
            members.writer(i).write_summary(trained[i].final)
            members.end(i, trained[i].state, None, trained[i].final)
    except (Exception, KeyboardInterrupt) as exc:  # noqa: BLE001 - every live member records the failure
        state, message = failure(exc, dirs[0])
        for i in members.alive():
            members.end(i, state, message)
    return [(d, members.states[i], results[i]) for i, d in enumerate(dirs)]
