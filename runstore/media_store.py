"""Media of every step in a run folder: images (with captions), histograms and media files. No Streamlit here.

Who writes what (the run store writer, runwriters/store.py, and the client, jaxdash/log_media.py):

* artifacts/images/<tag>/<step:010d>_<i>.png: every image logged at that step (a list keeps its order),
  and artifacts/images/<tag>/<step:010d>.json = {"tag", "step", "files", "captions"} written after
  them (a reader lists a step once its json exists). artifacts/images/<tag>.png stays the latest image;
* artifacts/histograms/<tag>.jsonl: one line a step, {"step", "counts", "edges"} (W&B's 64 bins);
* artifacts/media/<tag>/<step:010d>.<ext>: an Html, Audio, Video or Object3D file as logged;
* artifacts/texts/<tag>.jsonl: one line a step, {"tag", "step", "text"} (a string logged, as W&B keeps it);
* artifacts/values/<tag>.jsonl: one line a step, {"tag", "step", "value"} (an array of at most 32 numbers
  logged, kept as the list W&B's history holds).

Each file is written then renamed (`runstore.nofollow`: no folder on the way entered through a link), so a
polling reader never opens half of one; the newest KEEP_STEPS
steps of each tag are kept. Readers skip links, damaged files and other shapes.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from runstore import nofollow, run_store, safe_files
from runstore.run_folder import HISTOGRAMS, IMAGES, MEDIA, TEXTS, VALUES, RunFolder, artifacts_rel

KEEP_STEPS = 200  # steps of each image tag kept (a long run keeps its recent ones)
NUM_BINS = 64  # wandb.Histogram's default
RAW_BINS = 32  # what W&B bins an array logged as it is (more than 32 numbers) into
# Bytes of .jsonl read for one page (shared by a run's tags): the newest steps. 4 MB of the tersest histogram
# lines ("0,0,0,...") parse into ~100 MB of floats; a line (one step) over MAX_LINE is skipped (W&B's 512 bins
# are ~20 KB; a mirrored TensorBoard histogram of over ~25,000 buckets is not shown).
READ_BYTES = 4 * 2**20
MIN_SHARE = 64 * 2**10  # each tag's tail is at least this
MAX_LINE = 2**20


def tag_file(tag: str) -> str:
    """A tag's file name without suffix, the one rule for every media kind: "val/examples" -> "val__examples".

    A tag that is not its own slug ("Img", "样本", "a b", "a__b", a long one) gets 16 hex digits of its hash too
    ("img.3f..."), so two tags never share a file (TensorBoard shows "Img" and "img" apart)."""
    plain = tag.replace("/", "__")
    slug = run_store.slugify(plain, 80)
    if slug == plain and "__" not in tag:
        return slug
    return f"{slug[:60] or 'tag'}.{hashlib.blake2b(tag.encode('utf-8', 'surrogateescape'), digest_size=8).hexdigest()}"


def _write_bytes(run_dir: Path, rel: str, data: bytes) -> None:
    """run_dir/rel written atomically, its folders entered without following a link (runstore.nofollow)."""
    nofollow.replace(run_dir, rel, data, fsync=False)


def png_bytes(pixels: np.ndarray) -> bytes:
    """An HWC (or HW) uint8 array as PNG bytes (Pillow)."""
    import io

    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(np.asarray(pixels, dtype=np.uint8)).save(buf, format="PNG", compress_level=1)
    return buf.getvalue()


def write_image_step(
    run_dir: Path, tag: str, step: int, pngs: Sequence[bytes], captions: Sequence[str | None] = ()
) -> None:
    """Every image of `tag` at `step` (PNG bytes), their captions, and the tag's latest image (<tag>.png).

    Raises:
      safe_files.UnsafePath: artifacts/, images/ or the tag's folder is a link or not a folder (nothing written).
    """
    folder = artifacts_rel(IMAGES, tag_file(tag))
    names = [f"{int(step):010d}_{i}.png" for i in range(len(pngs))]
    for name, data in zip(names, pngs, strict=True):
        _write_bytes(run_dir, f"{folder}/{name}", data)
    caps = [None if c is None else str(c) for c in captions] + [None] * (len(pngs) - len(captions))
    doc = {"tag": tag, "step": int(step), "files": names, "captions": caps[: len(pngs)]}
    _write_bytes(run_dir, f"{folder}/{int(step):010d}.json", json.dumps(doc).encode())
    if pngs:
        _write_bytes(run_dir, f"{folder}.png", pngs[-1])
    _prune(run_dir, folder)


def _prune(run_dir: Path, folder: str) -> None:
    """Keep the newest KEEP_STEPS steps of a tag (listed and removed without following a link)."""
    found = nofollow.names(run_dir, folder)
    steps = sorted(n[:-5] for n in found if n.endswith(".json") and n[:-5].isdigit())
    for old in steps[:-KEEP_STEPS]:
        for name in found:
            if name.startswith(f"{old}_") and name.endswith(".png"):
                nofollow.remove(run_dir, f"{folder}/{name}")
        nofollow.remove(run_dir, f"{folder}/{old}.json")


def bins(values: Any, num_bins: int = NUM_BINS) -> tuple[list[float], list[float]] | None:
    """(counts, edges) of the finite values, as `wandb.Histogram` bins them: `np.histogram` in the array's own
    float dtype (float32 and bfloat16 edges are W&B's, not float64's); None when there are none."""
    arr = np.asarray(values).ravel()
    if not _float_dtype(arr.dtype):
        arr = arr.astype(np.float64)  # ints and bools: float64 edges, as np.histogram gives them
    arr = arr[np.isfinite(arr)]
    if arr.size == 0:
        return None
    count = max(1, min(int(num_bins), 512))
    try:
        counts, edges = np.histogram(arr, bins=count)
    except ValueError:  # float8/float4: fewer values between min and max than bins in their own dtype
        counts, edges = np.histogram(arr.astype(np.float64), bins=count)
    return counts.tolist(), [float(e) for e in edges.tolist()]


def _float_dtype(dtype: np.dtype) -> bool:
    """NumPy's floats and ml_dtypes' (bfloat16, float8, float4: NumPy kind "V"), which np.histogram bins as they are."""
    return dtype.kind == "f" or (dtype.kind == "V" and dtype.name.startswith(("float", "bfloat")))


def append_histogram(run_dir: Path, tag: str, step: int, counts: Sequence[float], edges: Sequence[float]) -> None:
    """One step of a histogram tag: a line of artifacts/histograms/<tag>.jsonl. Raises UnsafePath as `_append_line`."""
    line = {"tag": tag, "step": int(step), "counts": [float(c) for c in counts], "edges": [float(e) for e in edges]}
    _append_line(run_dir, artifacts_rel(HISTOGRAMS, f"{tag_file(tag)}.jsonl"), line)


def append_text(run_dir: Path, tag: str, step: int, text: str) -> None:
    """One step of a text tag: a line of artifacts/texts/<tag>.jsonl. Raises UnsafePath as `_append_line`."""
    _append_line(
        run_dir, artifacts_rel(TEXTS, f"{tag_file(tag)}.jsonl"), {"tag": tag, "step": int(step), "text": str(text)}
    )


def append_value(run_dir: Path, tag: str, step: int, value: Any) -> None:
    """One step of a tag W&B keeps as a JSON value (a small array as a list): a line of artifacts/values/<tag>.jsonl.
    Raises UnsafePath as `_append_line`."""
    _append_line(
        run_dir, artifacts_rel(VALUES, f"{tag_file(tag)}.jsonl"), {"tag": tag, "step": int(step), "value": value}
    )


def _append_line(run_dir: Path, rel: str, record: dict[str, Any]) -> None:
    """One JSON line appended to run_dir/rel, never through a link or FIFO on the way or under its name.

    Raises:
      safe_files.UnsafePath: a link or a non-regular file on the way or at the name; its one-line message names it.
    """
    nofollow.append(run_dir, rel, (json.dumps(record) + "\n").encode())


def write_media_file(run_dir: Path, tag: str, step: int, suffix: str, data: bytes) -> Path:
    """An Html/Audio/Video/Object3D file as artifacts/media/<tag>/<step>.<suffix>; its path.

    Raises:
      safe_files.UnsafePath: a folder on the way is a link or not a folder (nothing written).
    """
    rel = artifacts_rel(MEDIA, tag_file(tag), f"{int(step):010d}.{suffix.lstrip('.') or 'bin'}")
    _write_bytes(run_dir, rel, data)
    return Path(run_dir) / rel


@dataclass(frozen=True)
class ImageStep:
    """The images of one tag at one step, with their captions."""

    tag: str
    step: int
    paths: tuple[Path, ...]
    captions: tuple[str | None, ...]


def image_steps(run_dir: Path) -> dict[str, list[ImageStep]]:
    """Every image tag's steps (oldest first), from artifacts/images/<tag>/; {} when there are none."""
    root = RunFolder(run_dir).media_dir(IMAGES)
    if not safe_files.inside(run_dir, root) or not root.is_dir():
        return {}
    out: dict[str, list[ImageStep]] = {}
    for folder in sorted(p for p in root.iterdir() if p.is_dir() and not p.is_symlink()):
        for meta in sorted(p for p in folder.glob("*.json") if p.stem.isdigit()):
            item = _image_step(folder, meta)
            if item is not None:
                out.setdefault(item.tag, []).append(item)
    return out


def _image_step(folder: Path, meta: Path) -> ImageStep | None:
    doc = run_store.read_json(meta)
    if not isinstance(doc, dict) or not isinstance(doc.get("files"), list):
        return None
    paths = tuple(folder / str(f) for f in doc["files"] if safe_files.plain_name(str(f)))
    paths = tuple(p for p in paths if safe_files.is_regular(p))
    caps = doc.get("captions") if isinstance(doc.get("captions"), list) else []
    caps = tuple((str(c) if c is not None else None) for c in caps) + (None,) * len(paths)
    tag = doc.get("tag") if isinstance(doc.get("tag"), str) else folder.name.replace("__", "/")
    return ImageStep(tag, int(meta.stem), paths, caps[: len(paths)]) if paths else None


def histograms(run_dir: Path) -> dict[str, list[tuple[int, list[float], list[float]]]]:
    """Every histogram tag's (step, counts, edges) lines, oldest first, from the newest READ_BYTES of them all
    (`tail_lines`: each tag's share, at least MIN_SHARE); damaged lines skipped."""
    root = RunFolder(run_dir).media_dir(HISTOGRAMS)
    if not safe_files.inside(run_dir, root) or not root.is_dir():
        return {}
    out: dict[str, list[tuple[int, list[float], list[float]]]] = {}
    paths = sorted(p for p in root.glob("*.jsonl") if safe_files.is_regular(p))
    for path in paths:
        for line in tail_lines(path, max(READ_BYTES // len(paths), MIN_SHARE)):
            try:
                doc = json.loads(line)
                item = (int(doc["step"]), list(map(float, doc["counts"])), list(map(float, doc["edges"])))
            except (ValueError, KeyError, TypeError):
                continue  # a torn last line or another shape
            out.setdefault(str(doc.get("tag", path.stem.replace("__", "/"))), []).append(item)
    return out


def texts(run_dir: Path) -> dict[str, list[tuple[int, str]]]:
    """Every text tag's (step, text) lines, oldest first, within READ_BYTES as `histograms`; damaged lines skipped."""
    root = RunFolder(run_dir).media_dir(TEXTS)
    if not safe_files.inside(run_dir, root) or not root.is_dir():
        return {}
    out: dict[str, list[tuple[int, str]]] = {}
    paths = sorted(p for p in root.glob("*.jsonl") if safe_files.is_regular(p))
    for path in paths:
        for doc in json_lines(path, max(READ_BYTES // len(paths), MIN_SHARE)):
            if isinstance(doc.get("text"), str) and isinstance(doc.get("step"), int):
                out.setdefault(str(doc.get("tag", path.stem.replace("__", "/"))), []).append((doc["step"], doc["text"]))
    return out


def values(run_dir: Path) -> dict[str, list[tuple[int, Any]]]:
    """Every value tag's (step, value) lines (`append_value`), oldest first, within READ_BYTES as `histograms`."""
    root = RunFolder(run_dir).media_dir(VALUES)
    if not safe_files.inside(run_dir, root) or not root.is_dir():
        return {}
    out: dict[str, list[tuple[int, Any]]] = {}
    paths = sorted(p for p in root.glob("*.jsonl") if safe_files.is_regular(p))
    for path in paths:
        for doc in json_lines(path, max(READ_BYTES // len(paths), MIN_SHARE)):
            if "value" in doc and isinstance(doc.get("step"), int):
                out.setdefault(str(doc.get("tag", path.stem.replace("__", "/"))), []).append(
                    (doc["step"], doc["value"])
                )
    return out


def tail_lines(path: Path, max_bytes: int = READ_BYTES) -> list[str]:
    """The lines of the last `max_bytes` of a regular, non-link file (the newest steps; a line cut at the start of
    that window is dropped, so is one longer than MAX_LINE); [] if it cannot be read. Never more is read, so a
    file's size costs the page nothing (a run logging a histogram every step for days)."""
    try:
        with safe_files.open_regular(path) as f:
            size = os.fstat(f.fileno()).st_size
            start = max(size - max_bytes, 0)
            f.seek(start)
            data = f.read(max_bytes)
    except OSError:
        return []
    lines = data.split(b"\n")
    if start:
        lines = lines[1:]  # begins inside a line
    return [line.decode("utf-8", "replace") for line in lines if 0 < len(line) <= MAX_LINE]


def json_lines(path: Path, max_bytes: int = READ_BYTES) -> list[dict[str, Any]]:
    """The JSON objects of a .jsonl file's last `max_bytes` (`tail_lines`); a torn or damaged line is skipped."""
    out = []
    for line in tail_lines(path, max_bytes):
        try:
            doc = json.loads(line)
        except ValueError:
            continue
        if isinstance(doc, dict):
            out.append(doc)
    return out
