"""Population-based training (Jaderberg et al., 2017) on the member axis of one compiled program.

Every `interval` steps the members are ranked by a metric; each of the bottom `fraction` copies the
params and optimizer state of a member of the top `fraction` (a gather on the member axis, on the
device) and perturbs the copied learning rate (x0.8 or x1.25 by default, or, with probability
`resample`, a fresh log-uniform draw over the population's initial range). A member whose loss
went non-finite is replaced at once instead of ending. Decisions are drawn from a NumPy generator
seeded by (seed, step), so a run and its resume make the same choices.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax

from settings.fields import ConfigError

Copy = dict[str, Any]  # {"step", "member", "source", "old_lr", "new_lr", "reason"}


@dataclass(frozen=True)
class PbtConfig:
    """PBT settings of a population (stored in each member's config.json under "pbt")."""

    interval: int
    metric: str = ""  # "" = test/loss when the task evaluates, else train/loss
    fraction: float = 0.25
    factors: tuple[float, ...] = (0.8, 1.25)
    resample: float = 0.0
    seed: int = 0
    lr_range: tuple[float, float] = field(default=(0.0, 0.0))  # the initial lrs' (min, max), for resampling

    def validate(self, k: int) -> None:
        """ConfigError naming the PBT setting that cannot work for a population of `k`."""
        if self.interval < 1:
            raise ConfigError({"pbt_interval": f"PBT interval must be >= 1 step (got {self.interval})."})
        if k < 2:
            raise ConfigError({"pbt_interval": "PBT needs a population: list at least two learning rates."})
        if not 0 < self.fraction <= 0.5:
            raise ConfigError({"pbt_fraction": f"PBT fraction must be in (0, 0.5] (got {self.fraction})."})
        if not 0 <= self.resample <= 1:
            raise ConfigError({"pbt_resample": f"PBT resample probability must be in [0, 1] (got {self.resample})."})


def _is_hyper(node: Any) -> bool:
    return isinstance(node, optax.InjectStatefulHyperparamsState)


def learning_rates(state: Any) -> np.ndarray:
    """The members' learning rates [K], read from the `inject_hyperparams` optimizer state."""
    found = [n.hyperparams["learning_rate"] for n in jax.tree.leaves(state, is_leaf=_is_hyper) if _is_hyper(n)]
    if not found:
        raise ConfigError(
            {
                "pbt_interval": "PBT needs the learning rate in the optimizer state "
                "(optax.inject_hyperparams, as Task.optimizer() builds it)."
            }
        )
    return np.asarray(jax.device_get(found[0]), np.float64)  # sync point: K scalars, at PBT steps only


def _with_lrs(state: Any, lrs: jax.Array) -> Any:
    def swap(node: Any) -> Any:
        if _is_hyper(node):
            return node._replace(hyperparams={**node.hyperparams, "learning_rate": lrs})
        return node

    return jax.tree.map(swap, state, is_leaf=_is_hyper)


@jax.jit
def exploit(state: Any, source: jax.Array, lrs: jax.Array) -> Any:
    """Member i takes member source[i]'s arrays (a gather on the member axis), then learning rate lrs[i]."""
    copied = jax.tree.map(lambda a: a[source], state)
    return _with_lrs(copied, lrs.astype(jnp.float32))


def _ranking(scores: np.ndarray, higher_is_better: bool) -> np.ndarray:
    """Member indices best first; non-finite scores rank last."""
    keyed = np.where(np.isfinite(scores), -scores if higher_is_better else scores, np.inf)
    return np.argsort(keyed, kind="stable")


def plan(
    scores: Sequence[float],
    lrs: np.ndarray,
    step: int,
    cfg: PbtConfig,
    higher_is_better: bool,
    forced: Sequence[int] = (),
) -> list[Copy]:
    """Which members copy which, and their new learning rates (no device work).

    Args:
      scores: each member's metric now.
      lrs: each member's learning rate now.
      step: the global step (seeds the choices).
      higher_is_better: True for accuracies.
      forced: members to replace whatever their rank (e.g. diverged).
    """
    k = len(lrs)
    order = _ranking(np.asarray(scores, np.float64), higher_is_better)
    n = max(1, int(math.floor(k * cfg.fraction)))
    top = [int(i) for i in order[:n] if i not in forced]
    losers = sorted({*map(int, order[k - n :]), *forced} - set(top))
    if not top:
        return []
    rng = np.random.default_rng([cfg.seed, step])
    copies = []
    score = np.asarray(scores, np.float64)
    for member in losers:
        source = int(rng.choice(top))
        if member not in forced and score[member] == score[source]:
            continue  # no better than what it would copy (e.g. every member converged): nothing to gain
        factor = float(rng.choice(cfg.factors))
        new_lr = float(lrs[source]) * factor
        if cfg.resample > 0 and rng.random() < cfg.resample and cfg.lr_range[1] > 0:
            lo, hi = np.log(cfg.lr_range[0]), np.log(cfg.lr_range[1])
            new_lr = float(np.exp(rng.uniform(lo, hi)))
        new_lr = float(np.float32(new_lr))  # the device holds float32: the host copy and lineage say the same
        copies.append(
            {
                "step": step,
                "member": member,
                "source": source,
                "old_lr": float(lrs[member]),
                "new_lr": new_lr,
                "reason": "diverged" if member in forced else "ranked low",
            }
        )
    return copies


def apply(state: Any, copies: Sequence[Copy], lrs: np.ndarray) -> tuple[Any, np.ndarray]:
    """The stacked state after `copies`, and the new learning rates [K] (host copy)."""
    source = np.arange(len(lrs))
    new_lrs = np.array(lrs, np.float64)
    for c in copies:
        source[c["member"]] = c["source"]
        new_lrs[c["member"]] = c["new_lr"]
    return exploit(state, jnp.asarray(source), jnp.asarray(new_lrs)), new_lrs


class Exploiter:
    """The engine's PBT step: rank, copy on the device, perturb, and record the lineage in each member's run.

    Args:
      cfg: the PBT settings.
      metric: the tag members are ranked by (higher is better for accuracies).
    """

    def __init__(self, cfg: PbtConfig, metric: str):
        self.cfg, self.metric = cfg, metric
        self.higher_is_better = metric.endswith("acc")

    def __call__(
        self, state: Any, lrs: np.ndarray, step: int, scalars: Sequence[dict[str, float]], forced: Sequence[int]
    ) -> tuple[Any, np.ndarray, list[Copy]]:
        """The state and learning rates after this step's copies, and the copies (`record` writes them)."""
        scores = [s.get(self.metric, math.nan) for s in scalars]
        copies = plan(scores, lrs, step, self.cfg, self.higher_is_better, forced)
        if not copies:
            return state, lrs, []
        state, lrs = apply(state, copies, lrs)
        return state, lrs, copies

    def record(self, step: int, copies: Sequence[Copy], lineage: list[list[Copy]], writers: Sequence[Any]) -> None:
        """Each copied member's lineage extended and written to its run: the table, its lr, a line of text."""
        for c in copies:
            lineage[c["member"]].append(c)
            rows = [[e["step"], e["source"], e["old_lr"], e["new_lr"], e["reason"]] for e in lineage[c["member"]]]
            writer = writers[c["member"]]
            table = {"pbt/lineage": _table(["step", "source", "old_lr", "new_lr", "reason"], rows)}
            writer.write_tables(step, table)
            writer.write_hparams({"lr": c["new_lr"]})  # W&B config and TensorBoard's config text say the lr now
            writer.write_texts(
                step,
                {
                    "pbt/copies": f"step {step}: copied member {c['source']} ({c['reason']}), "
                    f"lr {c['old_lr']:.3g} -> {c['new_lr']:.3g}"
                },
            )


def _table(columns: list[str], rows: list[list[Any]]) -> Any:
    from runwriters.base import Table

    return Table(columns, rows)
