"""Figures of a run's test report: confusion matrix and image grids (plain data in, `go.Figure` out).

No JAX and no Streamlit here. Split from components/figures.py, which re-exports these names.
"""

from __future__ import annotations

import base64
import math
import struct
import zlib
from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from components.figure_style import _empty, _style

WRONG_COLOR = "#d62728"
TILE_PX = 90  # an image tile's width on the page


def png_data_uri(gray: np.ndarray) -> str:
    """A 2-D uint8 array as a grayscale PNG data URI (stdlib only, so no Pillow dependency)."""
    h, w = gray.shape

    def chunk(tag: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data))

    raw = np.hstack([np.zeros((h, 1), np.uint8), gray.astype(np.uint8)]).tobytes()  # filter 0 per row
    ihdr = struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0)  # 8-bit grayscale
    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(raw, 6)) + chunk(b"IEND", b"")
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def confusion_matrix_figure(
    confusion: np.ndarray | list,
    class_names: Sequence[str],
    *,
    title: str = "Confusion matrix",
    normalize: bool = False,
    height: int = 480,
    uirevision: str = "confusion",
) -> go.Figure:
    """Heatmap with true class on y (top to bottom) and predicted on x, each cell's count written in it.

    normalize=True colors by row fraction (recall), which keeps the off-diagonal visible
    next to a dominant diagonal; the cell text stays the count.
    """
    counts = np.asarray(confusion)
    k = len(class_names)
    if counts.shape != (k, k):
        raise ValueError(f"confusion has shape {counts.shape}, expected ({k}, {k}) for {k} class names")
    names = [str(c) for c in class_names]
    z = counts.astype(float)
    if normalize:
        z = z / np.maximum(z.sum(axis=1, keepdims=True), 1)
    fig = go.Figure(
        go.Heatmap(
            z=z,
            x=names,
            y=names,
            text=counts,
            texttemplate="%{text}",
            colorscale="Blues",
            showscale=False,
            hovertemplate="true %{y} → pred %{x}: %{text}<extra></extra>",
        )
    )
    # category axes: class names like "0".."9" must not be read as numbers
    fig.update_xaxes(title_text="predicted", type="category", side="bottom")
    fig.update_yaxes(title_text="true", type="category", autorange="reversed")
    return _style(fig, title, height, uirevision)


def image_grid_figure(
    images: np.ndarray,
    labels: Sequence[int],
    preds: Sequence[int] | None,
    class_names: Sequence[str],
    cols: int = 8,
    *,
    title: str = "Predictions",
) -> go.Figure:
    """Grayscale images in a grid, each titled "pred (true)"; mistakes in red.

    The grid is one mosaic PNG in a `go.Image` with blank bands for the titles: a single
    trace renders far faster than N subplots, and the PNG is ~10x smaller than an RGB `z`
    array (64 MNIST digits: tens of kB instead of ~400 kB per refresh).
    """
    imgs = np.asarray(images)
    fig = go.Figure()
    if imgs.size == 0:
        return _empty(_style(fig, title, 200, "images"), "no images")
    if imgs.dtype != np.uint8:  # floats in [0, 1] (or [0, 255]) to 8-bit gray
        scale = 255.0 if float(np.nanmax(imgs)) <= 1.0 else 1.0
        imgs = np.clip(np.nan_to_num(imgs) * scale, 0, 255).astype(np.uint8)
    n, h, w = imgs.shape[:3]
    cols = max(1, min(cols, n))
    rows = math.ceil(n / cols)
    band, pad = max(8, h // 3), 2  # title band above each tile, gap between tiles
    cell_h, cell_w = band + h, w + pad
    mosaic = np.full((rows * cell_h, cols * cell_w), 255, dtype=np.uint8)
    for i in range(n):
        r, c = divmod(i, cols)
        mosaic[r * cell_h + band : (r + 1) * cell_h, c * cell_w : c * cell_w + w] = imgs[i].reshape(h, w)
        true, pred = class_names[int(labels[i])], None if preds is None else int(preds[i])
        text = str(true) if pred is None else f"{class_names[pred]} ({true})"
        color = WRONG_COLOR if pred is not None and pred != int(labels[i]) else "#333"
        pos = dict(x=c * cell_w + w / 2, y=r * cell_h + band / 2, xanchor="center", yanchor="middle")
        fig.add_annotation(text=text, showarrow=False, font=dict(size=10, color=color), **pos)
    fig.add_trace(go.Image(source=png_data_uri(mosaic), hoverinfo="skip"))
    # explicit ranges: with `source` the browser would otherwise size axes only after decoding
    fig.update_xaxes(visible=False, range=[-0.5, mosaic.shape[1] - 0.5])
    fig.update_yaxes(visible=False, range=[mosaic.shape[0] - 0.5, -0.5], scaleanchor="x")
    height = 70 + rows * int(TILE_PX * cell_h / cell_w)
    _style(fig, title, height, "images")
    fig.update_layout(margin=dict(l=10, r=10, t=50, b=10))
    return fig
