"""The JavaScript that draws a metric grid with uPlot (line_grid.js), for inplace_chart's module.

components/compare_figures.metric_grid marks its figure (`layout.meta.grid`: the panels' titles,
the runs lacking each, log axes, columns, x title). The in-place chart draws such a figure with
uPlot (vendor/uPlot.iife.min.js, 51 KB, MIT) on canvas instead of plotly.js: a comparison of 50
runs is 100 lines in two panels, which plotly.js took 0.3-0.5 s to draw in a fresh tab. The figure
stays a plotly figure, so st.plotly_chart ($JAXDASH_INPLACE_CHARTS=0) and the tests read it as before.
"""

from __future__ import annotations

from pathlib import Path

from dashboard.server.plotly_preload import VENDOR

UPLOT_JS = "uPlot.iife.min.js"  # served from VENDOR by inplace_chart's "uplot" asset component
GRID_JS = (
    (Path(__file__).with_name("line_grid.js"))
    .read_text(encoding="utf-8")
    .replace("__UPLOT_CSS__", (VENDOR / "uPlot.min.css").read_text(encoding="utf-8"))
)
