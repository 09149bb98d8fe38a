"""Class names on the report images (confusion matrix, prediction grid), drawn with Pillow's own font.

`render` draws the pixels with NumPy; these add the words a reader needs to read them: which row
and column is which class, and what each test image was predicted (and, when wrong, what it is).
Every function takes and returns an HWC uint8 RGB array.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from runwriters import render

INK = (40, 40, 40)
FAINT = (110, 110, 110)
MAX_NAME_PX = 96  # longer class names are cut (with "..") to this width
LINE = 12  # pixels per text line


@functools.cache
def _font(size: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    return ImageFont.load_default(size=size)


@functools.lru_cache(maxsize=512)
def _fit(text: str, width: float, size: int = 10) -> str:
    """`text`, cut so that it is at most `width` pixels wide in the label font."""
    font = _font(size)
    if font.getlength(text) <= width:
        return text
    while text and font.getlength(text + "..") > width:
        text = text[:-1]
    return text + ".."


def _rotated(text: str, size: int, color: tuple[int, int, int]) -> Image.Image:
    """`text` turned to read bottom-up, on a transparent background (a column heading)."""
    return _label(text, size, color).rotate(90, expand=True)


@functools.lru_cache(maxsize=512)
def _label(text: str, size: int, color: tuple[int, int, int]) -> Image.Image:
    """`text` on a transparent strip, drawn once per process: a population's members and a sweep's
    trials name the same classes (FreeType drew ~60 ms of labels per member)."""
    font = _font(size)
    strip = Image.new("RGBA", (int(font.getlength(text)) + 2, LINE + 2), (0, 0, 0, 0))
    ImageDraw.Draw(strip).text((1, 0), text, fill=(*color, 255), font=font)
    return strip


def _paste_centred(canvas: Image.Image, label: Image.Image, x: int, y: int) -> None:
    """`label` with its middle at `x` and its top at `y`."""
    canvas.paste(label, (x - label.width // 2, y), label)


def confusion(counts: np.ndarray, class_names: Sequence[str], cell: int = 24) -> np.ndarray:
    """`render.render_confusion` with the true class named on each row and the predicted one on each column."""
    matrix = Image.fromarray(render.render_confusion(counts, cell=cell))
    frame, left, top = _confusion_frame(tuple(str(n) for n in class_names), matrix.size, cell)
    canvas = frame.copy()
    canvas.paste(matrix, (left, top))
    return np.asarray(canvas)


@functools.lru_cache(maxsize=8)
def _confusion_frame(names: tuple[str, ...], size: tuple[int, int], cell: int) -> tuple[Image.Image, int, int]:
    """The confusion matrix's labelled canvas, without the matrix, and where the matrix goes (left, top)."""
    names = tuple(_fit(n, MAX_NAME_PX) for n in names)
    longest = max((int(_font(10).getlength(n)) for n in names), default=0)
    left, top = longest + 8, longest + 8 + LINE
    canvas = Image.new("RGB", (left + size[0] + 4, top + size[1] + 4), render.WHITE)
    draw = ImageDraw.Draw(canvas)
    draw.text((left + size[0] // 2, 1), "predicted", fill=FAINT, font=_font(10), anchor="ma")
    draw.text((2, top - 2), "true", fill=FAINT, font=_font(10), anchor="ld")
    for i, name in enumerate(names):
        middle = i * cell + cell // 2
        draw.text((left - 4, top + middle), name, fill=INK, font=_font(10), anchor="rm")
        heading = _rotated(name, 10, INK)
        canvas.paste(heading, (left + middle - heading.width // 2, top - 3 - heading.height), heading)
    return canvas, left, top


def prediction_grid(
    images: np.ndarray,
    labels: np.ndarray,
    preds: np.ndarray,
    class_names: Sequence[str],
    cols: int = 8,
    scale: int = 2,
) -> np.ndarray:
    """`render.render_prediction_grid` with each image's predicted class under it, and its true class when wrong."""
    n = min(len(images), render.MAX_GRID_IMAGES)
    cols = max(1, min(cols, n or 1))
    grid = render.render_prediction_grid(images, labels, preds, cols=cols, scale=scale)
    rows = max(1, -(-n // cols))
    cell_h, cell_w = grid.shape[0] // rows, grid.shape[1] // cols
    out = Image.new("RGB", (grid.shape[1], rows * (cell_h + 2 * LINE)), render.WHITE)
    for r in range(rows):
        top = r * (cell_h + 2 * LINE)
        out.paste(Image.fromarray(grid[r * cell_h : (r + 1) * cell_h]), (0, top))
        for c in range(cols):
            i = r * cols + c
            if i >= n:
                break
            right = int(labels[i]) == int(preds[i])
            x, y = c * cell_w + cell_w // 2, top + cell_h
            pred = _fit(str(class_names[int(preds[i])]), cell_w - 2, 9)
            _paste_centred(out, _label(pred, 9, render.GREEN if right else render.RED), x, y)
            if not right:
                true = _fit(f"true {class_names[int(labels[i])]}", cell_w - 2, 9)
                _paste_centred(out, _label(true, 9, FAINT), x, y + LINE - 1)
    return np.asarray(out)
