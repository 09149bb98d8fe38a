"""One colour per run, everywhere: Live, compare, run detail and population views agree.

A run's colour depends on its id alone (a stable hash into a 24-colour palette readable on a
light and a dark background), so selecting or deselecting other runs never recolours it, and a reload or a second tab draws it the same.
"""

from __future__ import annotations

import hashlib

from plotly.colors import qualitative

# Plotly's Dark24, its nine colours that a dark theme's background swallows (contrast under 3:1 against
# Streamlit's dark #0e1117) replaced in place by colours of other qualitative palettes readable on white and
# on dark alike, each far from the rest: a run keeps its colour in either theme, and most runs keep Dark24's.
_DARK_ONLY = {
    "#222A2A": "#316395",
    "#750D86": "#B82E2E",
    "#511CFB": "#636EFA",
    "#862A16": "#0F8554",
    "#620042": "#984EA3",
    "#1616A7": "#666666",
    "#6C4516": "#0099C6",
    "#0D2A63": "#CF1C90",
    "#AF0038": "#9D755D",
}
PALETTE: tuple[str, ...] = tuple(_DARK_ONLY.get(c, c) for c in qualitative.Dark24)


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
