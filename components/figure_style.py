"""The look every dashboard figure shares: template, title, height, legend and `uirevision`."""

from __future__ import annotations

import plotly.graph_objects as go

TEMPLATE = "plotly_white"


def _style(fig: go.Figure, title: str, height: int, uirevision: str) -> go.Figure:
    fig.update_layout(
        template=TEMPLATE,
        title=dict(text=title, x=0, xanchor="left", y=0.98, yanchor="top"),
        height=height,
        margin=dict(l=60, r=20, t=80, b=50),
        legend=dict(orientation="h", yanchor="bottom", y=1.02, xanchor="left", x=0),
        uirevision=uirevision,
    )
    return fig


def _empty(fig: go.Figure, text: str = "no data yet") -> go.Figure:
    fig.add_annotation(
        text=text, x=0.5, y=0.5, xref="paper", yref="paper", showarrow=False, font=dict(size=16, color="#999")
    )
    return fig.update_xaxes(visible=False).update_yaxes(visible=False)
