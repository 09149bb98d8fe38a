"""A run's config as the pages show it: nested settings flattened to dotted keys, as W&B and TensorBoard name them.

`jaxdash.init(config={"model": {"hidden": 128}})` keeps its nesting in config.json (W&B's config and a resume
read it back as it was given); every page that shows config (the Runs table's columns, Live's caption, compare,
Run detail's HParams) and the TensorBoard writer's hparams show `model.hidden`, through `flatten`.
No JAX and no Streamlit here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

SEP = "."  # W&B's runs table and TensorBoard's HParams tab join nested keys with "."


def flatten(config: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """{"model": {"hidden": 128}, "lr": 0.1} -> {"model.hidden": 128, "lr": 0.1}; other values (lists included)
    as they are. An empty nested mapping keeps its key (with {}), so a setting never disappears from view."""
    out: dict[str, Any] = {}
    for key, value in config.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            out.update(flatten(value, f"{name}{SEP}"))
        else:
            out[name] = value
    return out
