"""Populations: one run per combination of listed learning rates and seeds, all trained by one program.

    python -m training regression --population lr=0.001,0.005,0.02 --population seed=0,1

trains the 6 combinations (the cartesian product) together: the engine vmaps the task's step
over a member axis. Each member is an ordinary run directory (own config.json with top-level
"group" and "member", status.json, metrics.jsonl, tb/, W&B run in W&B group <group>, ckpt/).
No JAX here: the page validates populations with it.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any

from settings.fields import ConfigError

VARIED = ("lr", "seed")  # fields that change values only, never shapes: one compiled program fits all
MAX_MEMBERS = 64  # all members train in one program; beyond this a typo is likelier than intent (CLI and page)


def split_values(text: str) -> list[str]:
    """ "0.001, 0.01" -> ["0.001", "0.01"]."""
    return [v.strip() for v in text.split(",") if v.strip()]


def parse_axes(specs: Sequence[str]) -> dict[str, list[str]]:
    """["lr=0.001,0.005", "seed=0,1"] -> {"lr": ["0.001", "0.005"], "seed": ["0", "1"]}.

    Raises:
      ConfigError: a malformed spec, a field that cannot vary, or a field given twice.
    """
    axes: dict[str, list[str]] = {}
    for spec in specs:
        name, sep, values = spec.partition("=")
        name = name.strip().replace("-", "_")
        listed = split_values(values)
        if not sep or not listed:
            raise ConfigError(
                {"population": f"expects FIELD=V1,V2,... (got {spec!r}), e.g. --population lr=0.001,0.01."}
            )
        if name not in VARIED:
            raise ConfigError(
                {
                    "population": f"can vary {' and '.join(VARIED)} only (got {name!r}); other settings "
                    "change array shapes or data, so train them as separate runs."
                }
            )
        if name in axes:
            raise ConfigError(
                {"population": f"{name} is given twice; list all its values in one --population {name}=..."}
            )
        axes[name] = listed
    return axes


def member_raws(raw: Mapping[str, Any], axes: Mapping[str, Sequence[Any]]) -> list[dict[str, Any]]:
    """One raw config per combination of the axes' values (cartesian product, in order)."""
    return [{**raw, **dict(zip(axes, combo, strict=True))} for combo in itertools.product(*axes.values())]
