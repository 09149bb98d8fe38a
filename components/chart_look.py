"""What a line chart is asked to be, as typed objects: its frame (titles, size, empty text) and its look.

A chart's settings travel together from the page's controls to the figure builders
(`figures.curves_figure`, `figures.accuracy_figure`, `compare_figures.metric_grid`): one `CurveLook` says
how every line is drawn (smoothing, log y, points kept, each series' colour, dash and hover name), one
`Frame` what surrounds them. Frozen, so a caller derives a variant with `dataclasses.replace`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class CurveLook:
    """How a chart draws its lines.

    smoothing: EMA weight in [0, 1) (0 = raw), as TensorBoard's slider; the raw line stays, faint.
    log_y: a logarithmic y axis.
    max_points: points kept per line (min/max downsampling, so spikes survive).
    colors: series name -> colour (default: the palette in order); dashes: series name -> "dash", "dot", ...;
    full_names: series name -> what the hover says where the legend name is shortened.
    """

    smoothing: float = 0.0
    log_y: bool = False
    max_points: int = 2000
    colors: Mapping[str, str] | None = None
    dashes: Mapping[str, str] | None = None
    full_names: Mapping[str, str] | None = None


@dataclass(frozen=True)
class Frame:
    """What surrounds a chart's lines.

    uirevision: plotly keeps the user's zoom and hidden lines while it stays the same across redraws.
    layout: more plotly layout settings, merged into the one layout update that styles the figure.
    """

    title: str
    y_title: str = ""
    x_title: str = "step"
    height: int = 360
    uirevision: str = "curves"
    empty_text: str = "no data yet"
    layout: Mapping[str, Any] | None = None


PLAIN = CurveLook()  # raw lines, linear y, the palette in order
