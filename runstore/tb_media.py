"""Images, histograms, text and hparams of TensorBoard events, as the media panels take them (runstore/media_store).

`media_of` reads one event's values (already migrated by TensorBoard's `EventFileLoader`: legacy image,
histogram and text summaries arrive as tensors under their plugin's name) into plain items; `write` puts
a run's new items into its mirror folder through runstore.media_store, so Run detail and Live draw a
logdir's images (per step, slider), histograms (per step and over steps), text and hparams with the
panels that draw a client run's. No JAX and no Streamlit here.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
from tensorboard.compat.proto import types_pb2

from runstore import media_store, nofollow, safe_files, tb_tensors
from runstore.run_folder import HISTOGRAMS, IMAGES, TEXTS, RunFolder

MAX_TEXT = 100_000  # characters of one text value kept
Item = tuple[str, str, int, Any]  # kind ("image", "histogram", "text", "hparams"), tag, step, payload


def _histogram(array: np.ndarray, budget: tb_tensors.Budget | None) -> tuple[list[float], list[float]] | None:
    """(counts, edges) of TensorBoard's [k, 3] buckets (left, right, count); None for another shape, or when the
    lists (~64 bytes a bucket) do not fit in `budget`. No bucket (a histogram of nothing) is ([], []): TensorBoard
    lists that step with no bucket, so the mirror keeps it too."""
    if array.ndim != 2 or array.shape[1] != 3 or array.dtype.kind not in "fiu":
        return None
    if array.shape[0] == 0:
        return [], []
    if budget is not None and not budget.take(array.shape[0] * 64):
        return None
    buckets = array.astype(np.float64)
    if not np.isfinite(buckets).all():
        return None
    return buckets[:, 2].tolist(), buckets[:, 0].tolist() + [float(buckets[-1, 1])]


def _text(tensor: Any) -> str:
    """A text summary's strings: one as it is, several one a line (a table's rows joined by " | "), cut to MAX_TEXT
    characters as they are read: nothing past the cut is decoded or joined (a million copies of one string claimed)."""
    pieces: list[str] = []
    length = 0
    for r, row in enumerate(tb_tensors.text_rows(tensor)):
        for c, cell in enumerate(row):
            piece = ("\n" if r and not c else " | " if c else "") + cell[: MAX_TEXT - length].decode("utf-8", "replace")
            pieces.append(piece)
            length += len(piece)
            if length >= MAX_TEXT:
                return "".join(pieces)[:MAX_TEXT]
    return "".join(pieces)


def _hparams(content: bytes) -> dict[str, Any] | None:
    """The hparams of a session start (TensorBoard's hparams plugin), or None for its other records."""
    from tensorboard.plugins.hparams import plugin_data_pb2

    data = plugin_data_pb2.HParamsPluginData()
    try:
        data.ParseFromString(content)
    except Exception:  # noqa: BLE001 - a damaged record (protobuf's DecodeError): not shown
        return None
    if data.WhichOneof("data") != "session_start_info":
        return None
    out: dict[str, Any] = {}
    for name, v in data.session_start_info.hparams.items():
        kind = v.WhichOneof("kind")
        out[name] = None if kind in (None, "null_value") else getattr(v, kind)
    return out


def media_of(event: Any, prefix: str = "", budget: tb_tensors.Budget | None = None) -> list[Item]:
    """The image, histogram, text and hparams values of one event, tags under the split's `prefix`; a tensor
    claiming more than its bytes hold, or past what is left of `budget`, is left out (runstore/tb_tensors.py)."""
    out: list[Item] = []
    step = int(event.step)
    for value in event.summary.value:
        plugin = value.metadata.plugin_data.plugin_name
        tag = value.tag if value.tag.startswith(prefix) else prefix + value.tag
        if plugin == "hparams":
            hp = _hparams(value.metadata.plugin_data.content)
            if hp is not None:
                out.append(("hparams", tag, step, hp))
            continue
        if plugin not in ("images", "histograms", "text") or not value.HasField("tensor"):
            continue
        if plugin == "text":
            if value.tensor.dtype == types_pb2.DT_STRING:
                text = _text(value.tensor)
                if budget is None or budget.take(len(text) * 4):
                    out.append(("text", tag, step, text))
            continue
        array = tb_tensors.to_array(value.tensor, budget)
        if array is None:
            continue
        if plugin == "images" and array.ndim == 1 and array.size >= 3 and array.dtype.kind in "OSU":
            out.append(("image", tag, step, [bytes(b) for b in array[2:]]))  # [width, height, png, ...]
        elif plugin == "histograms" and (hist := _histogram(array, budget)) is not None:
            out.append(("histogram", tag, step, hist))
    return out


def safe_media_of(event: Any, prefix: str = "", budget: tb_tensors.Budget | None = None) -> list[Item]:
    """`media_of`, or nothing for an event whose media cannot be read (its scalars are still mirrored)."""
    try:
        return media_of(event, prefix, budget)
    except Exception:  # noqa: BLE001 - a value of an unexpected shape: left out, never the file's damage
        return []


_LAST: dict[Path, dict[tuple[str, str], int]] = {}  # mirror -> (kind, tag) -> last step written this process


def forget(mirror: Path) -> None:
    """A mirror started afresh (its artifacts removed): no step of it is written yet."""
    _LAST.pop(Path(mirror), None)


def _purge(mirror: Path, kind: str, tag: str, step: int) -> None:
    """A restarted writer (a step at or below the tag's last): drop the tag's steps at or after it, as
    TensorBoard's reader does per time series (runstore.tb_logdir.preempted for scalars)."""
    if kind == "image":
        folder = RunFolder(mirror).media_dir(IMAGES) / media_store.tag_file(tag)
        for meta in [p for p in folder.glob("*.json") if p.stem.isdigit() and int(p.stem) >= step]:
            for png in folder.glob(f"{meta.stem}_*.png"):
                png.unlink(missing_ok=True)
            meta.unlink(missing_ok=True)
        return
    sub = HISTOGRAMS if kind == "histogram" else TEXTS
    path = RunFolder(mirror).media_dir(sub) / f"{media_store.tag_file(tag)}.jsonl"
    if not safe_files.is_regular(path):
        return
    keep = [line for line in path.read_text(encoding="utf-8").splitlines() if _step_of(line) < step]
    nofollow.replace(path.parent, path.name, "".join(k + "\n" for k in keep).encode(), fsync=False)


def _step_of(line: str) -> int:
    try:
        return int(json.loads(line)["step"])
    except (ValueError, KeyError, TypeError):
        return -1  # a torn line: kept out of the way (readers skip it)


def write(mirror: Path, items: list[Item]) -> None:
    """A run's new media items into its mirror folder (media_store's layout); hparams into config.json."""
    hparams: dict[str, Any] = {}
    last = _LAST.setdefault(Path(mirror), {})
    for kind, tag, step, payload in items:
        if kind != "hparams" and last.get((kind, tag), -1) >= step:
            _purge(Path(mirror), kind, tag, step)
        last[(kind, tag)] = step
        if kind == "image":
            media_store.write_image_step(mirror, tag, step, payload)
        elif kind == "histogram":
            media_store.append_histogram(mirror, tag, step, *payload)
        elif kind == "text":
            media_store.append_text(mirror, tag, step, payload)
        elif kind == "hparams":
            hparams.update(payload)
    if hparams:
        doc = RunFolder(mirror).config()
        if isinstance(doc, dict):
            doc["config"] = {**(doc.get("config") or {}), **hparams}
            doc["hparams"] = sorted(hparams)
            RunFolder(mirror).replace_config(doc)
