"""W&B's media types under `import jaxdash as wandb`: Image, Histogram, Plotly, Html, Audio, Video, Object3D.

Same names, arguments and defaults as `wandb.sdk.data_types` (read there). Each holds what the run
store, TensorBoard and the W&B copy take (pixels, bins, a plotly figure, a file's bytes); jaxdash/log_media.py
hands them to the writers when logged. Nothing here raises for input W&B accepts: input that cannot
be read is logged once as a notice naming the type and the value, and the medium is skipped.
"""

from __future__ import annotations

import io
import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

logger = logging.getLogger("jaxdash")
_NOTICED: set[str] = set()


def notice(what: str, text: str) -> None:
    """One warning per `what` for the whole process (a loop logging the same thing warns once)."""
    if what not in _NOTICED:
        _NOTICED.add(what)
        logger.warning("jaxdash: %s: %s", what, text)


def is_matplotlib(value: Any) -> bool:
    """A matplotlib Figure (or Axes, or `matplotlib.pyplot` itself), as wandb's `is_matplotlib_typename`."""
    name = getattr(type(value), "__module__", "") or ""
    return name.startswith("matplotlib") or getattr(value, "__name__", "") == "matplotlib.pyplot"


def _mpl_figure(value: Any) -> Any:
    if getattr(value, "__name__", "") == "matplotlib.pyplot":
        return value.gcf()
    return value.get_figure() if hasattr(value, "get_figure") and not hasattr(value, "savefig") else value


def _mpl_pixels(value: Any) -> np.ndarray:
    from PIL import Image as PILImage

    buf = io.BytesIO()
    _mpl_figure(value).savefig(buf, format="png")
    return np.asarray(PILImage.open(io.BytesIO(buf.getvalue())).convert("RGBA"))


def mpl_to_plotly(value: Any) -> dict[str, Any] | None:
    """A matplotlib figure as plotly JSON (plotly's converter, as W&B uses); None where it cannot convert
    (a figure holding images, or a matplotlib the converter does not know): then it is logged as an image."""
    fig = _mpl_figure(value)
    if any(ax.get_images() for ax in getattr(fig, "axes", [])):
        return None  # W&B too logs a figure with images as an image
    try:
        import plotly.tools

        return plotly.tools.mpl_to_plotly(fig).to_plotly_json()
    except Exception:  # noqa: BLE001 - plotly's converter fails on many figures; W&B falls back to an image too
        return None


def _rescale(arr: np.ndarray) -> np.ndarray:
    """uint8 as W&B's `_guess_and_rescale_to_0_255`: floats in [0, 1] x255, in [-1, 1] shifted, else clipped."""
    if arr.dtype == np.uint8:
        return arr
    data = np.nan_to_num(arr.astype(np.float64))
    low, high = (float(data.min()), float(data.max())) if data.size else (0.0, 0.0)
    if arr.dtype.kind == "f" and low >= 0 and high <= 1:
        data = data * 255
    elif arr.dtype.kind == "f" and low >= -1 and high <= 1:
        data = (data + 1) * 127.5
    return np.clip(data, 0, 255).astype(np.uint8)


def to_pixels(data: Any, mode: str | None = None) -> np.ndarray:
    """HWC (or HW) uint8 pixels from an array, a PIL image, a matplotlib figure or an image file's path."""
    from PIL import Image as PILImage

    if isinstance(data, (str, os.PathLike)):
        with PILImage.open(Path(data)) as img:
            data = img.convert(mode) if mode else img.copy()
    if is_matplotlib(data):
        return _mpl_pixels(data)
    if isinstance(data, PILImage.Image):
        return np.asarray(data.convert(mode) if mode else data)
    arr = np.asarray(data)
    if arr.ndim == 3 and arr.shape[-1] not in (1, 3, 4) and arr.shape[0] in (1, 3, 4):
        arr = np.moveaxis(arr, 0, -1)  # C x H x W, as PyTorch-style code (and W&B) take it
    if arr.ndim == 3 and arr.shape[-1] == 1:
        arr = arr[..., 0]
    if arr.ndim not in (2, 3) or arr.size == 0 or arr.dtype.kind not in "biuf":
        raise ValueError(f"expected an H x W or H x W x C array of numbers, got shape {arr.shape} ({arr.dtype})")
    pixels = _rescale(arr)
    return np.asarray(PILImage.fromarray(pixels).convert(mode)) if mode else pixels


class Image:
    """`wandb.Image(data_or_path, mode=None, caption=None, ...)`: an array, PIL image, matplotlib figure or path."""

    def __init__(self, data_or_path: Any, mode: str | None = None, caption: str | None = None, **extra: Any) -> None:
        self.caption, self.mode = caption, mode
        drawn = sorted(k for k in ("boxes", "masks") if extra.get(k))
        if drawn:
            notice(f"Image({', '.join(drawn)})", "bounding boxes and masks are not drawn here; the image is logged")
        if isinstance(data_or_path, Image):
            self.pixels: np.ndarray | None = data_or_path.pixels
            return
        try:
            self.pixels = to_pixels(data_or_path, mode)
        except Exception as exc:  # noqa: BLE001 - a bad image is skipped with a notice, never stops the run
            self.pixels = None
            notice(f"Image({type(data_or_path).__name__})", f"{exc}; this image is not logged")

    @property
    def image(self) -> Any:
        """The pixels as a PIL image (as `wandb.Image.image`)."""
        from PIL import Image as PILImage

        return PILImage.fromarray(self.pixels) if self.pixels is not None else None


class Histogram:
    """`wandb.Histogram(sequence=None, np_histogram=None, num_bins=64)`: bins kept as (histogram, bins)."""

    MAX_LENGTH = 512

    def __init__(self, sequence: Sequence | None = None, np_histogram: Any = None, num_bins: int = 64) -> None:
        self.histogram: list[float] = []
        self.bins: list[float] = []
        try:
            if np_histogram is not None:
                counts, edges = np_histogram
            else:
                arr = np.asarray(sequence if sequence is not None else [], dtype=np.float64).ravel()
                arr = arr[np.isfinite(arr)]
                counts, edges = np.histogram(arr, bins=max(1, min(int(num_bins), self.MAX_LENGTH)))
            self.histogram = np.asarray(counts, np.float64).tolist()
            self.bins = np.asarray(edges, np.float64).tolist()
            if len(self.bins) != len(self.histogram) + 1:
                raise ValueError(f"{len(self.bins)} bin edges for {len(self.histogram)} counts")
        except Exception as exc:  # noqa: BLE001 - never stops the run
            self.histogram, self.bins = [], []
            notice("Histogram", f"{exc}; this histogram is not logged")


class Plotly:
    """`wandb.Plotly(figure)`: a plotly figure (or a matplotlib one, converted) for the page's figures."""

    def __init__(self, val: Any) -> None:
        if is_matplotlib(val):
            self.figure = mpl_to_plotly(val)
            self.fallback = Image(val) if self.figure is None else None
        else:
            self.figure = val.to_plotly_json() if hasattr(val, "to_plotly_json") else val
            self.fallback = None


class _File:
    """A medium kept as a file in the run folder (artifacts/media/<key>/<step>.<suffix>)."""

    suffix = "bin"

    def __init__(self, data_or_path: Any, caption: str | None = None) -> None:
        self.caption = caption
        self.data: bytes | None = None
        try:
            if isinstance(data_or_path, (str, os.PathLike)) and os.path.isfile(data_or_path):
                self.suffix = Path(data_or_path).suffix.lstrip(".") or self.suffix
                self.data = Path(data_or_path).read_bytes()
            else:
                self.data = self._encode(data_or_path)
        except Exception as exc:  # noqa: BLE001 - accepted with a notice, as W&B accepts it
            notice(type(self).__name__, f"{exc}; not stored")

    def _encode(self, data: Any) -> bytes:
        raise ValueError(f"{type(data).__name__} is not a file path")


class Html(_File):
    """`wandb.Html(data, inject=True)`: HTML text, a file-like object or a path; kept as an .html file."""

    suffix = "html"

    def __init__(self, data: Any, inject: bool = True, data_is_not_path: bool = False) -> None:
        if hasattr(data, "read"):
            data = data.read()
        is_path = isinstance(data, str) and not data_is_not_path and len(data) < 4096 and os.path.isfile(data)
        super().__init__(data if is_path else data.encode() if isinstance(data, str) else data)

    def _encode(self, data: Any) -> bytes:
        return data if isinstance(data, bytes) else str(data).encode()


class Audio(_File):
    """`wandb.Audio(data_or_path, sample_rate=None, caption=None)`: a path, or samples written as a 16-bit WAV."""

    suffix = "wav"

    def __init__(self, data_or_path: Any, sample_rate: int | None = None, caption: str | None = None) -> None:
        self.sample_rate = sample_rate
        super().__init__(data_or_path, caption)

    def _encode(self, data: Any) -> bytes:
        import wave

        if self.sample_rate is None:
            raise ValueError("an array of samples needs sample_rate=")
        arr = np.asarray(data, dtype=np.float64)
        channels = 1 if arr.ndim == 1 else arr.shape[1]
        pcm = (np.clip(arr, -1, 1) * 32767).astype("<i2")
        buf = io.BytesIO()
        with wave.open(buf, "wb") as out:
            out.setnchannels(channels)
            out.setsampwidth(2)
            out.setframerate(int(self.sample_rate))
            out.writeframes(pcm.tobytes())
        return buf.getvalue()


class Video(_File):
    """`wandb.Video(data_or_path, caption=None, fps=None, format=None)`: a path, or frames (T, C, H, W) as a GIF."""

    suffix = "gif"

    def __init__(self, data_or_path: Any, caption: str | None = None, fps: int | None = None, format: str | None = None,  # noqa: A002
                 **_: Any) -> None:  # fmt: skip
        self.fps = fps or 4
        super().__init__(data_or_path, caption)

    def _encode(self, data: Any) -> bytes:
        from PIL import Image as PILImage

        arr = np.asarray(data)
        if arr.ndim == 5:
            arr = arr[0]  # (batch, time, channel, height, width): the first clip
        if arr.ndim != 4:
            raise ValueError(f"frames must be (time, channel, height, width), got shape {arr.shape}")
        frames = [PILImage.fromarray(to_pixels(frame)) for frame in arr]
        buf = io.BytesIO()
        frames[0].save(
            buf, format="GIF", save_all=True, append_images=frames[1:], duration=int(1000 / self.fps), loop=0
        )
        return buf.getvalue()


class Object3D(_File):
    """`wandb.Object3D(data_or_path)`: a mesh file's path, or a point cloud (N x 3/4/6) kept as JSON points."""

    suffix = "pts.json"

    def __init__(self, data_or_path: Any, caption: str | None = None, **_: Any) -> None:
        super().__init__(data_or_path, caption)

    def _encode(self, data: Any) -> bytes:
        import json

        arr = np.asarray(data.get("points") if isinstance(data, dict) else data, dtype=np.float64)
        if arr.ndim != 2 or arr.shape[1] not in (3, 4, 6):
            raise ValueError(f"a point cloud is N x 3, 4 or 6, got shape {arr.shape}")
        return json.dumps(arr.tolist()).encode()


class Molecule(_File):
    """`wandb.Molecule(data_or_path)`: a molecule file kept as it is."""

    suffix = "pdb"

    def __init__(self, data_or_path: Any, caption: str | None = None, **_: Any) -> None:
        super().__init__(data_or_path, caption)
