"""The look every dashboard figure shares: template, title, height, legend and `uirevision`."""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go
import plotly.io as pio

TEMPLATE = "plotly_white"
MODEBAR_PX = 32  # plotly's toolbar: buttons 22 px high at 2 px from the top-right corner, with their padding
# A title in the band between the toolbar and the plot (for figures without a legend above the plot): its
# bottom on the plot's top edge, so however long it is the toolbar never covers it.
TITLE_BELOW_MODEBAR = dict(x=0, xanchor="left", xref="paper", y=1, yanchor="bottom", yref="paper", pad=dict(b=10))


def set_template(fig: go.Figure) -> go.Figure:
    """Give `fig` the shared template without validating it again.

    Setting a template by name validates and deep-copies its ~7 KB of settings: about 7 ms of the
    ~15 ms it takes to build a live chart, on every refresh of every chart. The registered template
    is valid already, so it is set as plotly itself sets its default template (validation off for
    that one assignment).
    """
    layout = fig.layout
    layout._validate = False
    try:
        layout.template = pio.templates[TEMPLATE]
    finally:
        layout._validate = True
    return fig


def _style(fig: go.Figure, title: str, height: int, uirevision: str, **layout: Any) -> go.Figure:
    """The shared look, plus the figure's own `layout` settings, in one layout update.

    Plotly's update_layout walks its whole property tree (3-10 ms a call once a template is set),
    while a layout built at once costs ~1 ms: a live chart is built on every refresh, so its
    layout is merged here and assigned in one go, and the template set last.
    """
    style = dict(
        title=dict(text=title, x=0, xanchor="left", y=0.98, yanchor="top"),
        height=height,
        margin=dict(l=60, r=20, t=80, b=50),
        legend=dict(orientation="h", yanchor="bottom", y=1.02, xanchor="left", x=0),
        uirevision=uirevision,
    )
    base = {k: v for k, v in fig.layout.to_plotly_json().items() if k != "template"}  # set last, unvalidated
    fig.layout = _merged(_merged(base, style), layout)
    return set_template(fig)


def _merged(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    """`base` with `extra` laid over it, nested settings merged key by key (as update_layout does)."""
    out = dict(base)
    for key, value in extra.items():
        old = out.get(key)
        out[key] = _merged(old, value) if isinstance(old, dict) and isinstance(value, dict) else value
    return out


def _empty(fig: go.Figure, text: str = "no data yet") -> go.Figure:
    note = dict(text=text, x=0.5, y=0.5, xref="paper", yref="paper", showarrow=False, font=dict(size=16, color="#999"))
    return fig.update_layout(annotations=[*fig.layout.annotations, note], xaxis_visible=False, yaxis_visible=False)
