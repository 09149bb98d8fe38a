"""Histograms logged over steps, drawn as TensorBoard draws them: one step's bars, the steps offset one
behind the other (its Histograms tab) and the percentile bands over steps (its Distributions tab).

Plain data in, `go.Figure` out: no JAX, no Streamlit, no run store. A histogram is (step, counts, edges)
with len(edges) == len(counts) + 1, as `wandb.Histogram` and runstore.media_store keep it. Only scatter and
bar traces: the page's basic plotly.js bundle draws them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

import numpy as np
import plotly.graph_objects as go

from components.figure_style import TITLE_BELOW_MODEBAR, _empty, _style

Hist = tuple[int, Sequence[float], Sequence[float]]  # (step, counts, edges)
T = TypeVar("T")
OFFSET_STEPS = 30  # steps drawn one behind the other; more would be a smear
# TensorBoard's distribution basis points: the percentiles of -inf, -1.5, -1, -0.5, 0, 0.5, 1, 1.5 sigma, inf.
BASIS_POINTS = (0.0, 6.68, 15.87, 30.85, 50.0, 69.15, 84.13, 93.32, 100.0)
BLUE = (31, 119, 180)


def _styled(fig: go.Figure, title: str, height: int, uirevision: str, **layout: object) -> go.Figure:
    """The shared look with the title between the chart's toolbar and the plot (a tag's name can be long)."""
    fig = _style(fig, title, height, uirevision, **layout)
    fig.layout.title.update(TITLE_BELOW_MODEBAR)
    return fig


def valid(hist: Hist) -> bool:
    """True when a histogram has finite edges, one more than its counts, and no negative count."""
    _, counts, edges = hist
    c, e = np.asarray(counts, float), np.asarray(edges, float)
    return c.ndim == 1 and e.size == c.size + 1 and c.size > 0 and bool(np.isfinite(e).all()) and bool((c >= 0).all())


def sample(items: Sequence[T], limit: int) -> list[T]:
    """At most `limit` items (histograms by step), evenly spread, the first and the newest always kept."""
    if len(items) <= limit:
        return list(items)
    idx = np.unique(np.linspace(0, len(items) - 1, max(2, limit)).round().astype(int))
    return [items[i] for i in idx]


def step_bars(hist: Hist, tag: str, x_title: str = "step", uirevision: str = "hist") -> go.Figure:
    """One step's histogram as bars, each as wide as its bin."""
    step, counts, edges = hist
    e = np.asarray(edges, float)
    fig = go.Figure(
        go.Bar(
            x=(e[:-1] + e[1:]) / 2,
            y=np.asarray(counts, float),
            width=np.abs(np.diff(e)),  # TensorBoard's server may serve an empty end bucket backwards (min > limit)
            marker=dict(color=f"rgb{BLUE}", line=dict(width=0)),
            name=tag,
            hovertemplate="%{x:.4g}: %{y:g}<extra></extra>",
        )
    )
    return _styled(fig, f"{tag} at {x_title} {step:,}", 360, uirevision, bargap=0, showlegend=False)


def offsets(hists: Sequence[Hist], tag: str, x_title: str = "step", uirevision: str = "hist") -> go.Figure:
    """TensorBoard's offset view: each step's histogram an outline one row behind the next, the newest darkest."""
    fig = go.Figure()
    shown = sample([h for h in hists if valid(h)], OFFSET_STEPS)
    if not shown:
        return _empty(_styled(fig, f"{tag} over {x_title}s", 320, uirevision), "no histogram")
    peak = max(float(np.max(h[1])) for h in shown) or 1.0
    row = 1.0 / 3  # each histogram may rise three rows above its own baseline
    last = len(shown) - 1
    for i, (step, counts, edges) in enumerate(
        shown
    ):  # as TensorBoard: the oldest at the back (top), the newest in front
        base = (last - i) * row
        e, c = np.asarray(edges, float), np.asarray(counts, float)
        x = np.repeat(e, 2)[1:-1]  # a step outline: each bin's flat top
        y = base + np.repeat(c / peak, 2)
        shade = 0.25 + 0.75 * (i + 1) / len(shown)
        fig.add_trace(
            go.Scatter(
                x=np.concatenate([[e[0]], x, [e[-1]]]),
                y=np.concatenate([[base], y, [base]]),
                mode="lines",
                fill="toself",
                line=dict(color=f"rgba{(*BLUE, shade)}", width=1),
                fillcolor="rgba(255,255,255,0.85)",  # hides the older outlines behind it
                meta={"fill": "page"},  # in the page's background colour where the in-place chart draws it
                name=f"{x_title} {step:,}",
                hovertemplate=f"{x_title} {step:,}<extra></extra>",
            )
        )
    ticks = sample(list(range(len(shown))), 6)
    yaxis = dict(
        tickvals=[(last - i) * row for i in ticks], ticktext=[f"{shown[i][0]:,}" for i in ticks], title=x_title
    )
    return _styled(fig, f"{tag} over {x_title}s (histograms)", 360, uirevision, showlegend=False, yaxis=yaxis)


def percentiles(counts: Sequence[float], edges: Sequence[float], points: Sequence[float] = BASIS_POINTS) -> np.ndarray:
    """The values at `points` (percent) of a histogram, linear within a bin (as TensorBoard's compressor)."""
    c, e = np.asarray(counts, float), np.asarray(edges, float)
    total = c.sum()
    if total <= 0:
        return np.full(len(points), np.nan)
    cum = np.concatenate([[0.0], np.cumsum(c)]) / total * 100.0
    return np.interp(np.asarray(points, float), cum, e)


def distribution(hists: Sequence[Hist], tag: str, x_title: str = "step", uirevision: str = "hist") -> go.Figure:
    """TensorBoard's distribution view: over steps, bands between the percentile pairs and the median."""
    ok = [h for h in hists if valid(h)]
    fig = go.Figure()
    if not ok:
        return _empty(_styled(fig, f"{tag} over {x_title}s", 320, uirevision), "no histogram")
    steps = np.array([h[0] for h in ok], float)
    table = np.array([percentiles(c, e) for _, c, e in ok])  # steps x basis points
    n = len(BASIS_POINTS)
    for k in range(n // 2):  # outermost band first, each inner one darker on top
        lo, hi = table[:, k], table[:, n - 1 - k]
        fig.add_trace(
            go.Scatter(
                x=np.concatenate([steps, steps[::-1]]),
                y=np.concatenate([hi, lo[::-1]]),
                fill="toself",
                mode="lines",
                line=dict(width=0),
                fillcolor=f"rgba{(*BLUE, 0.15 + 0.12 * k)}",
                hoverinfo="skip",
                name=f"{BASIS_POINTS[k]:g}-{BASIS_POINTS[n - 1 - k]:g}%",
            )
        )
    median = table[:, n // 2]
    fig.add_trace(go.Scatter(x=steps, y=median, mode="lines", line=dict(color=f"rgb{BLUE}", width=1.5), name="median"))
    return _styled(fig, f"{tag} over {x_title}s (distribution)", 320, uirevision, showlegend=False, xaxis_title=x_title)
