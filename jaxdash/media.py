"""`jaxdash.Image`, `jaxdash.Table` and plotly figures in `run.log`: media the page's media section shows.

They are written when logged (on the caller's thread: media are rare, and an image must be on the
host anyway): images as the run's artifacts/images/<key>.png, tables as artifacts/tables/<key>.json,
plotly figures as artifacts/figures/<key>/<step>.json, and to TensorBoard and W&B where they take
them. Names follow wandb's: `wandb.Image(array, caption=...)`, `wandb.Table(columns=..., data=...)`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from training.writers.base import Table as StoreTable


class Image:
    """An image from a NumPy/JAX array (H x W, H x W x 1/3/4; floats in [0, 1] or integers 0-255) or a PIL image."""

    def __init__(self, data: Any, caption: str | None = None) -> None:
        self.caption = caption
        self.pixels = _pixels(data)


class Table:
    """Rows under named columns, as `wandb.Table(columns=[...], data=[[...], ...])`."""

    def __init__(self, columns: Sequence[str] | None = None, data: Sequence[Sequence[Any]] | None = None) -> None:
        rows = [list(r) for r in (data or [])]
        self.columns = list(columns) if columns is not None else [f"c{i}" for i in range(len(rows[0]) if rows else 0)]
        bad = [i for i, r in enumerate(rows) if len(r) != len(self.columns)]
        if bad:
            raise ValueError(
                f"jaxdash.Table: row {bad[0]} has {len(rows[bad[0]])} cells for {len(self.columns)} columns"
            )
        self.data = rows

    def add_data(self, *row: Any) -> None:
        """Append one row (as wandb's Table.add_data)."""
        if len(row) != len(self.columns):
            raise ValueError(f"jaxdash.Table.add_data: {len(row)} cells for {len(self.columns)} columns")
        self.data.append(list(row))

    def to_store(self) -> StoreTable:
        """The run store's table (numbers as plain floats)."""
        return StoreTable(self.columns, [[_plain(c) for c in r] for r in self.data])


def _plain(cell: Any) -> Any:
    if isinstance(cell, (str, int, float, bool)) or cell is None:
        return cell
    arr = np.asarray(cell)
    return arr.item() if arr.size == 1 else arr.tolist()


def _pixels(data: Any) -> np.ndarray:
    """uint8 H x W x C pixels from an array or a PIL image; a clear error for anything else."""
    arr = np.asarray(data)
    if arr.ndim == 3 and arr.shape[-1] not in (1, 3, 4) and arr.shape[0] in (1, 3, 4):
        arr = np.moveaxis(arr, 0, -1)  # C x H x W, as PyTorch-style code writes it
    if arr.ndim == 3 and arr.shape[-1] == 1:
        arr = arr[..., 0]
    if arr.ndim not in (2, 3) or arr.size == 0:
        raise ValueError(f"jaxdash.Image: expected an H x W or H x W x C array, got shape {arr.shape}")
    if arr.dtype.kind == "f":
        arr = np.clip(np.nan_to_num(arr) * (255.0 if arr.max(initial=0.0) <= 1.0 else 1.0), 0, 255)
    return arr.astype(np.uint8)


def is_media(value: Any) -> bool:
    """An Image, a Table or a plotly figure (anything with `to_plotly_json`)."""
    return isinstance(value, (Image, Table)) or hasattr(value, "to_plotly_json")


def write_media(writer: Any, step: int, media: dict[str, Any]) -> None:
    """Hand each medium to the writers' general methods (images, tables, figures)."""
    images = {k: v.pixels for k, v in media.items() if isinstance(v, Image)}
    tables = {k: v.to_store() for k, v in media.items() if isinstance(v, Table)}
    figures = {k: v.to_plotly_json() for k, v in media.items() if hasattr(v, "to_plotly_json")}
    if images:
        writer.write_images(step, images)
    if tables:
        writer.write_tables(step, tables)
    if figures:
        writer.write_figures(step, figures)
