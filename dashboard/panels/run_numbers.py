"""The texts of a run's progress bar and metric tiles: what the panel draws and the poll route sends.

Streamlit-free and without page code, so that the poll route (dashboard/server_app.py) computes
the same texts as the panel (panel_kinds.metric_tiles, panels.progress) without importing a page
module: a page module imported by a route's worker thread declared its components outside a script
run (#36).
"""

from __future__ import annotations

import time
from typing import Any

from components import figures
from dashboard.reading.provider import MetricTable
from runstore import tags

HIDDEN_PREFIXES = ("perf/", "epoch/", "sys/")  # not headline numbers (steps/s is in the progress line)
MAX_TILES = 6
COMPILE_TILE = "compile time"


def fmt(v: float | None, spec: str = ".4g") -> str:
    """A number for st.metric, or an em dash."""
    return "—" if v is None else format(v, spec)


def progress_fraction(status: dict[str, Any]) -> float:
    """How far the run is, 0-1, from status.json (1 once finished)."""
    step, total = status.get("step") or 0, status.get("total_steps") or 0
    if status.get("state") == "finished":
        return 1.0
    return min(1.0, max(0.0, step / total)) if total else 0.0


HEADLINE_WORDS = ("loss", "acc")  # a key whose name says loss or accuracy is a headline number, whatever its prefix


def tile_tags(records: MetricTable) -> list[str]:
    """The metrics worth a number at the top: losses and accuracies first (a run of 300 keys shows its
    train/loss, not grads/layer000..005), then the task's own tags, then train/*, then test/*."""
    shown = [t for t in records.tags() if not t.startswith(HIDDEN_PREFIXES)]
    rank = {tags.TRAIN: 1, tags.TEST: 2}

    def order(tag: str) -> tuple[int, int, str]:
        name = tag.rsplit("/", 1)[-1].lower()
        return (0 if any(w in name for w in HEADLINE_WORDS) else 1, rank.get(tag.split("/")[0], 0), tag)

    return sorted(shown, key=order)[:MAX_TILES]


def percent(v: float) -> str:
    """An accuracy as a percentage; a value that is no fraction (say 1e308) as itself, never "inf%"."""
    return f"{v:.2%}" if 0.0 <= v <= 1.0 else f"{fmt(v)} (not a fraction)"


def tile_values(records: MetricTable, status: dict[str, Any]) -> dict[str, str]:
    """{label: text} of the tiles: each headline metric's latest value (accuracies in percent), the compile time."""
    values = {}
    for tag in tile_tags(records):
        v = records.last(tag)
        values[tag] = "—" if v is None else percent(v) if tag.endswith("acc") else fmt(v)
    comp = status.get("compile_seconds")
    # our training's chunks: a time once compiled, a phase ("compiling") before; a client script or a TensorBoard
    # log compiles nothing of ours (its status says "training" with no compile time): no tile
    if comp is not None or status.get("phase") not in (None, "training"):
        values[COMPILE_TILE] = "—" if comp is None else f"{comp:.1f} s"
    return values


def numbers(status: dict[str, Any], records: MetricTable) -> dict[str, Any]:
    """What the panel's progress bar and tiles show now: {"fraction", "text", "tiles": {label: text}}."""
    return {
        "fraction": progress_fraction(status),
        "text": figures.progress_text(status, now=time.time()),
        "tiles": tile_values(records, status),
        "keys": len(records.tags()),  # a new key: the Live panel reruns to chart it (live_numbers)
    }
