"""Numpy-only raster images for TensorBoard and W&B (no matplotlib in the training process).

Every function returns an HWC uint8 RGB array. They are cheap (a few ms) so
writers can call them once per chunk, and deterministic so tests can check
pixels.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

WHITE = (255, 255, 255)
GRAY = (150, 150, 150)
POINT = (70, 110, 200)
FIT = (230, 90, 30)
RED = (220, 30, 30)
GREEN = (40, 170, 70)
MAX_GRID_IMAGES = 64  # test images in a prediction grid


@dataclass
class FitSummary:
    """A model's curve over its data, e.g. the fitted line of a regression (a task's summary, drawn by `render_fit`).

    x, y: the data points (a task subsamples them: `training.tasks.summaries.subsample`); curve_x, curve_y: the model's predictions at
    sorted inputs; truth_y: the true function at curve_x, when the task knows it.
    """

    x: np.ndarray
    y: np.ndarray
    curve_x: np.ndarray
    curve_y: np.ndarray
    truth_y: np.ndarray | None = None


# 3x5 bitmap digits, enough to print counts in confusion-matrix cells without a font library.
_DIGITS = {
    "0": "111101101101111",
    "1": "010110010010111",
    "2": "111001111100111",
    "3": "111001111001111",
    "4": "101101111001001",
    "5": "111100111001111",
    "6": "111100111101111",
    "7": "111001001001001",
    "8": "111101111101111",
    "9": "111101111001111",
}


def _canvas(h: int, w: int, color: tuple[int, int, int] = WHITE) -> np.ndarray:
    img = np.empty((h, w, 3), dtype=np.uint8)
    img[:] = color
    return img


def _plot_line(img: np.ndarray, px: np.ndarray, py: np.ndarray, color: tuple[int, int, int], width: int = 1) -> None:
    """Set pixels at float coordinates (clipped to the image), thickened to `width`."""
    h, w = img.shape[:2]
    xs, ys = np.rint(px).astype(int), np.rint(py).astype(int)
    for d in range(-(width // 2), width - width // 2):
        yy = ys + d
        ok = (xs >= 0) & (xs < w) & (yy >= 0) & (yy < h)
        img[yy[ok], xs[ok]] = color


def render_regression(
    x: np.ndarray, y: np.ndarray, weight: float, bias: float, true_weight: float, true_bias: float, **size: int
) -> np.ndarray:
    """`render_fit` of the line w*x + b against the true line."""
    xs = np.linspace(float(np.min(x)), float(np.max(x)), 2) if np.size(x) else np.zeros(0)
    return render_fit(FitSummary(x, y, xs, weight * xs + bias, true_weight * xs + true_bias), **size)


def render_fit(fit: FitSummary, width: int = 320, height: int = 240) -> np.ndarray:
    """Scatter of the fit's data, its true curve dashed gray (when given) and the model's curve in orange.

    Axis ranges come from the data (with a margin), so the curve may leave the frame early in
    training; the visible part is what matters. Curves are drawn as polylines through their points.
    """
    x = np.asarray(fit.x, dtype=np.float64).ravel()
    y = np.asarray(fit.y, dtype=np.float64).ravel()
    img = _canvas(height, width)
    if x.size == 0:
        return img
    pad = 8
    x0, x1 = float(x.min()), float(x.max())
    y0, y1 = float(y.min()), float(y.max())
    if x1 - x0 < 1e-12:
        x0, x1 = x0 - 1, x1 + 1
    if y1 - y0 < 1e-12:
        y0, y1 = y0 - 1, y1 + 1
    my = 0.08 * (y1 - y0)
    y0, y1 = y0 - my, y1 + my

    def to_px(xv: np.ndarray, yv: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return (
            pad + (xv - x0) / (x1 - x0) * (width - 2 * pad - 1),
            height - 1 - pad - (yv - y0) / (y1 - y0) * (height - 2 * pad - 1),
        )

    img[height - pad, pad : width - pad] = GRAY  # light axes frame so the image reads as a plot
    img[pad : height - pad + 1, pad] = GRAY
    if x.size > 2000:
        idx = np.linspace(0, x.size - 1, 2000).astype(int)
        x, y = x[idx], y[idx]
    px, py = to_px(x, y)
    for dx, dy in ((0, 0), (1, 0), (0, 1), (1, 1)):
        _plot_line(img, px + dx, py + dy, POINT)
    xs = np.linspace(x0, x1, 4 * width)
    cx = np.asarray(fit.curve_x, dtype=np.float64).ravel()
    if fit.truth_y is not None:
        tx, ty = to_px(xs, np.interp(xs, cx, np.asarray(fit.truth_y, dtype=np.float64).ravel()))
        dashed = (np.arange(xs.size) // 24) % 2 == 0
        _plot_line(img, tx[dashed], ty[dashed], GRAY, width=2)
    cy = np.asarray(fit.curve_y, dtype=np.float64).ravel()
    if cx.size and np.all(np.isfinite(cy)):
        fx, fy = to_px(xs, np.interp(xs, cx, cy))
        _plot_line(img, fx, fy, FIT, width=3)
    return img


def _gray_to_rgb(img: np.ndarray, scale: int) -> np.ndarray:
    g = np.asarray(img)
    if g.dtype != np.uint8:
        g = np.clip(g * (255.0 if g.max() <= 1.0 else 1.0), 0, 255).astype(np.uint8)
    g = np.kron(g, np.ones((scale, scale), dtype=np.uint8)) if scale > 1 else g
    return np.repeat(g[..., None], 3, axis=-1)


def render_prediction_grid(
    images: np.ndarray,
    labels: np.ndarray,
    preds: np.ndarray,
    cols: int = 8,
    scale: int = 2,
    max_images: int = MAX_GRID_IMAGES,
) -> np.ndarray:
    """Grid of test images, each framed green (right) or red (wrong)."""
    n = min(len(images), max_images)
    cols = max(1, min(cols, n or 1))
    rows = max(1, -(-n // cols))
    h, w = images.shape[1] * scale if n else 28 * scale, images.shape[2] * scale if n else 28 * scale
    b = 2  # frame width
    cell_h, cell_w = h + 2 * b + 2, w + 2 * b + 2
    grid = _canvas(rows * cell_h, cols * cell_w)
    for i in range(n):
        r, c = divmod(i, cols)
        y, x = r * cell_h + 1, c * cell_w + 1
        grid[y : y + h + 2 * b, x : x + w + 2 * b] = GREEN if int(labels[i]) == int(preds[i]) else RED
        grid[y + b : y + b + h, x + b : x + b + w] = _gray_to_rgb(images[i], scale)
    return grid


@functools.cache
def _glyph(ch: str, scale: int) -> np.ndarray:
    bits = np.array([int(b) for b in _DIGITS.get(ch, "0" * 15)], dtype=bool).reshape(5, 3)
    return np.kron(bits, np.ones((scale, scale), dtype=bool))


def _draw_number(img: np.ndarray, top: int, left: int, text: str, color: tuple[int, int, int], scale: int = 1) -> None:
    for k, ch in enumerate(text):
        bits = _glyph(ch, scale)
        y, x = top, left + k * 4 * scale
        region = img[y : y + bits.shape[0], x : x + bits.shape[1]]
        region[bits[: region.shape[0], : region.shape[1]]] = color


def render_confusion(confusion: np.ndarray, cell: int = 24) -> np.ndarray:
    """Confusion matrix heat map (rows = true, cols = predicted) with counts."""
    cm = np.asarray(confusion, dtype=np.float64)
    n = cm.shape[0]
    row_sum = np.maximum(cm.sum(axis=1, keepdims=True), 1)
    frac = cm / row_sum  # per-row share, so rare classes are as visible as common ones
    img = _canvas(n * cell + 1, n * cell + 1, (200, 200, 200))
    for i in range(n):
        for j in range(n):
            f = frac[i, j]
            color = np.array([255, 255, 255]) * (1 - f) + np.array([20, 60, 160]) * f
            img[i * cell + 1 : (i + 1) * cell, j * cell + 1 : (j + 1) * cell] = color.astype(np.uint8)
            text = str(int(cm[i, j]))
            scale = 1 if len(text) * 4 > cell // 2 else 2
            tw, th = len(text) * 4 * scale - scale, 5 * scale
            ink = WHITE if f > 0.5 else (30, 30, 30)
            _draw_number(
                img, i * cell + (cell - th) // 2 + 1, j * cell + max(1, (cell - tw) // 2 + 1), text, ink, scale
            )
    return img
