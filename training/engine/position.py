"""The engine's host-side bookkeeping: the run's plan, where the loop stands, and per-chunk reductions.

`Position` is what a checkpoint's meta records, so a resumed run continues mid-epoch exactly
(same steps, same logged values) as an uninterrupted one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import jax
import numpy as np

from runstore import tags
from training.tasks.base import Data


@dataclass(frozen=True)
class Plan:
    """How many steps a run takes: full-batch `steps`, or `epochs` of N // batch_size steps."""

    epochs: int
    steps_per_epoch: int
    batch_size: int | None

    @classmethod
    def of(cls, cfg: Any, n_train: int) -> Plan:
        """The plan of a config (`batch_size` + `epochs`, or `steps`) over `n_train` training examples."""
        batch = getattr(cfg, "batch_size", None)
        if batch:
            return cls(cfg.epochs, n_train // batch, batch)
        return cls(1, cfg.steps, None)

    @property
    def batched(self) -> bool:
        return self.batch_size is not None

    @property
    def total_steps(self) -> int:
        return self.epochs * self.steps_per_epoch


@dataclass
class Position:
    """Where the loop stands, with each member's running sums of this epoch and latest test metrics."""

    k: int
    step: int = 0
    epoch: int = 1  # 1-based epoch in progress
    pos: int = 0  # steps done in this epoch
    sums: dict[str, np.ndarray] = field(default_factory=dict)  # metric -> [K] sum over this epoch's steps
    test: list[dict[str, float]] = field(default_factory=list)
    last: list[dict[str, float]] = field(default_factory=list)  # each member's latest chunk scalars
    evaluated_at: int = -1
    lineage: list[list[dict[str, Any]]] = field(default_factory=list)  # each member's PBT copies

    @classmethod
    def start(cls, k: int) -> Position:
        return cls(k, test=[{} for _ in range(k)], last=[{} for _ in range(k)], lineage=[[] for _ in range(k)])

    def begin_epoch(self, epoch: int) -> None:
        if epoch != self.epoch:
            self.epoch, self.pos, self.sums = epoch, 0, {}

    def advance(self, length: int, metrics: Mapping[str, np.ndarray]) -> None:
        """Count a chunk of `length` steps with its per-step metrics [K, length]."""
        self.step += length
        self.pos += length
        for name, values in metrics.items():
            chunk_sum = np.asarray(values).sum(axis=1, dtype=np.float32).astype(np.float64)
            self.sums[name] = self.sums.get(name, 0.0) + chunk_sum

    def epoch_means(self, i: int) -> dict[str, float]:
        """Member i's means over this epoch, e.g. {"epoch/train_loss": ...} (plain metric names only)."""
        return {f"{tags.EPOCH}/{tags.TRAIN}_{n}": float(v[i] / self.pos) for n, v in self.sums.items() if "/" not in n}

    def final(self, i: int, batched: bool) -> dict[str, float]:
        """Member i's final metrics: train means of the last epoch (or the last chunk) and the latest test."""
        if batched and self.pos:
            train = {tags.metric_tag(tags.TRAIN, n): float(v[i] / self.pos) for n, v in self.sums.items()}
        else:
            train = {k: v for k, v in self.last[i].items() if k.split("/")[0] not in ("perf", "sys", "test")}
        return {**train, **self.test[i]}

    def final_basis(self, i: int, batched: bool) -> dict[str, str]:
        """What member i's `final` numbers are where they are not the metric's last logged value (a tile shows
        that one): {"train/loss": "epoch mean"} for a batched run's train means; the page labels them so."""
        if not (batched and self.pos):
            return {}
        return {tags.metric_tag(tags.TRAIN, n): "epoch mean" for n in self.sums}

    def meta(self, i: int) -> dict[str, Any]:
        """Member i's position as JSON for its checkpoint."""
        return {
            "step": self.step,
            "epoch": self.epoch,
            "pos": self.pos,
            "evaluated_at": self.evaluated_at,
            "sums": {n: float(v[i]) for n, v in self.sums.items()},
            "test": self.test[i],
            "last": self.last[i],
            "lineage": self.lineage[i],
        }

    @classmethod
    def from_meta(cls, metas: Sequence[Mapping[str, Any]]) -> Position:
        """The position of K members restored from their checkpoints (same step, epoch and place)."""
        m0 = metas[0]
        sums = {n: np.array([m["sums"][n] for m in metas]) for n in m0["sums"]}
        return cls(
            len(metas),
            m0["step"],
            m0["epoch"],
            m0["pos"],
            sums,
            [dict(m["test"]) for m in metas],
            [dict(m["last"]) for m in metas],
            m0.get("evaluated_at", -1),
            [list(m.get("lineage", [])) for m in metas],
        )


def reduce_chunk(metrics: Mapping[str, np.ndarray], i: int, last_value: Sequence[str]) -> dict[str, float]:
    """Member i's scalars of one chunk: each metric's mean over the chunk, or its last value."""
    return {
        tags.metric_tag(tags.TRAIN, n): float(v[i][-1] if n in last_value else v[i].mean()) for n, v in metrics.items()
    }


def data_for(datas: Sequence[Data], i: int) -> Data:
    """Member i's data (one per member, or one shared by all)."""
    return datas[i] if len(datas) > 1 else datas[0]


def param_arrays(params: Any) -> dict[str, np.ndarray]:
    """{"Dense_0/kernel": array, ...} from any pytree of arrays."""
    out = {}
    for path, leaf in jax.tree_util.tree_flatten_with_path(params)[0]:
        name = "/".join(str(getattr(p, "key", getattr(p, "name", getattr(p, "idx", p)))) for p in path)
        out[name] = np.asarray(leaf)
    return out
