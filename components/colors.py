"""One colour per run, everywhere: Live, compare, run detail and population views agree.

A run's colour depends on its id alone (a stable hash into a 24-colour palette readable on a
light and a dark background), so selecting or deselecting other runs never recolours it, and a reload or a second tab draws it the same.
"""

from __future__ import annotations

import hashlib
import math

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


SEPARATE = 35.0  # CIELAB distance (delta E 1976) two members' colours keep where the palette allows: ~20 reads alike


def distinct_colors(run_ids: list[str]) -> dict[str, str]:
    """{run id: colour} where no two runs share one and none looks like another (a population's members): each run's
    own colour while it is at least SEPARATE from every colour taken before it, else the palette's free colour
    farthest from those (the first of equals: the same on every page and reload)."""
    out: dict[str, str] = {}
    for run_id in run_ids:
        taken = [_lab(c) for c in out.values()]
        free = [c for c in PALETTE if c not in out.values()] or list(PALETTE)  # more runs than colours: repeat
        own = run_color(run_id)
        if own in free and _nearest(own, taken) >= SEPARATE:
            out[run_id] = own
        else:
            out[run_id] = max(free, key=lambda c: _nearest(c, taken))
    return out


def _nearest(color: str, taken: list[tuple[float, float, float]]) -> float:
    """The CIELAB distance from `color` to the closest of `taken` (inf when none is)."""
    lab = _lab(color)
    return min((math.dist(lab, t) for t in taken), default=math.inf)


def _lab(color: str) -> tuple[float, float, float]:
    """CIELAB (D65) of a hex sRGB colour."""
    rgb = [int(color.lstrip("#")[i : i + 2], 16) / 255 for i in (0, 2, 4)]
    r, g, b = [((c + 0.055) / 1.055) ** 2.4 if c > 0.04045 else c / 12.92 for c in rgb]
    xyz = ((0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047, 0.2126 * r + 0.7152 * g + 0.0722 * b,
           (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883)  # fmt: skip
    fx, fy, fz = [v ** (1 / 3) if v > 0.008856 else 7.787 * v + 16 / 116 for v in xyz]
    return 116 * fy - 16, 500 * (fx - fy), 200 * (fy - fz)
