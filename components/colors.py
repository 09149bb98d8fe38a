"""One colour per run, everywhere: Live, compare, run detail and population views agree.

A run's colour depends on its id alone (a stable hash into a 24-colour palette), so selecting or
deselecting other runs never recolours it, and a reload or a second tab draws it the same.
"""

from __future__ import annotations

import hashlib

from plotly.colors import qualitative

PALETTE: tuple[str, ...] = tuple(qualitative.Dark24)


def run_color(run_id: str) -> str:
    """The colour of run `run_id` (hex), the same on every page and in every session."""
    digest = hashlib.sha1(run_id.encode()).digest()
    return PALETTE[int.from_bytes(digest[:4], "big") % len(PALETTE)]


def distinct_colors(run_ids: list[str]) -> dict[str, str]:
    """{run id: colour} where no two runs share one (a population's members): each run's own colour,
    unless an earlier run in the list has it, then the next free colour of the palette."""
    out: dict[str, str] = {}
    for run_id in run_ids:
        start = PALETTE.index(run_color(run_id))
        free = [PALETTE[(start + k) % len(PALETTE)] for k in range(len(PALETTE))]
        free = [c for c in free if c not in out.values()] or free  # more runs than colours: repeat
        out[run_id] = free[0]
    return out
