"""Images a run logged at every step (W&B's `wandb.Image`, lists of them, captions): a step slider per key.

Read through runstore.media_store (artifacts/images/<tag>/<step>_<i>.png and <step>.json). The slider
follows the newest step while the run logs more, until the user moves it. Captions (the tag and step where
an image has none) are escaped (safe_text.md): a run's text is data, never markdown that could load something.
"""

from __future__ import annotations

import functools
import hashlib
import io
from pathlib import Path

import streamlit as st
from PIL import Image

from dashboard.panels import safe_text
from runstore import media_store, safe_files
from runstore.run_folder import IMAGES, RunFolder

MAX_IMAGE_BYTES = 16 << 20  # a larger file is named, not sent to the browser
MIN_WIDTH = 160  # pixels: a smaller image is drawn at least this wide (W&B scales small images up too)
MAX_UPSCALED_PIXELS = 4 << 20  # a tall, thin image is not blown up past this many pixels
COLUMNS = 4


def widget_key(key: str, name: str) -> str:
    """A widget key for `name` (a run's tag: any text) that holds no "__" or other character a component refuses."""
    return f"{key}_{hashlib.sha1(name.encode('utf-8', 'replace')).hexdigest()[:12]}"


def step_index(key: str, steps: list[int], label: str = "Step") -> int:
    """The index of the step to show: a slider when there are several, on the newest until the user moves it."""
    if len(steps) <= 1:
        return 0
    newest_key, slider_key = f"{key}_newest", f"{key}_step"
    chosen = st.session_state.get(slider_key)
    if chosen is None or chosen == st.session_state.get(newest_key) or chosen not in steps:
        st.session_state[slider_key] = steps[-1]  # follow the newest step as the run logs more
    st.session_state[newest_key] = steps[-1]
    return steps.index(int(st.select_slider(label, options=steps, key=slider_key)))


def sharp(png: bytes) -> tuple[bytes, int | str] | None:
    """A small image (an 8x8 sample, a 28x28 digit) scaled up by a whole factor to at least MIN_WIDTH pixels with
    nearest-neighbour, so its pixels stay sharp squares (a browser's own scaling blurs them), with the width to
    draw it at; a larger one as it is, drawn at its own width. None when the bytes are no image (a damaged file)."""
    try:
        with Image.open(io.BytesIO(png)) as im:
            width, height = im.size
            if width >= MIN_WIDTH or width == 0:
                return png, "content"
            factor = -(-MIN_WIDTH // width)
            if width * height * factor * factor > MAX_UPSCALED_PIXELS:
                return png, "content"
            big = im.resize((width * factor, height * factor), Image.Resampling.NEAREST)
            out = io.BytesIO()
            big.save(out, format="PNG")
    except (OSError, ValueError, Image.DecompressionBombError):
        return None
    return out.getvalue(), width * factor


def tag_panel(tag: str, items: list[media_store.ImageStep], key: str) -> None:
    """One image key: its step slider, then every image of the chosen step with its caption."""
    with st.container(border=True):
        st.text(tag)
        item = items[step_index(widget_key(key, tag), [i.step for i in items])]
        st.caption(f"step {item.step:,} · {len(item.paths)} image{'s' if len(item.paths) != 1 else ''}")
        step_images(item, tag)


def step_images(item: media_store.ImageStep, tag: str, columns: int = COLUMNS) -> None:
    """Every image of one step of an image key, `columns` a row, with its caption (escaped)."""
    cols = st.columns(min(columns, len(item.paths)))
    for i, (path, caption) in enumerate(zip(item.paths, item.captions, strict=True)):
        with cols[i % len(cols)]:
            try:
                data = safe_files.read_regular(path, MAX_IMAGE_BYTES + 1)
            except OSError:
                st.text(f"{path.name}: gone (pruned or being replaced)")
                continue
            if len(data) > MAX_IMAGE_BYTES:
                st.text(f"{path.name}: larger than {MAX_IMAGE_BYTES >> 20} MB; not shown")
                continue
            shown = sharp(data)
            if shown is None:
                st.text(f"{path.name}: not an image (damaged?); not shown")
                continue
            # escaped: a caption is the run's text, shown as written (st.image draws captions as markdown)
            label = safe_text.md(caption or f"{tag} · step {item.step:,}")
            st.image(shown[0], width=shown[1], output_format="PNG", caption=label)


def _signature(run_dir: Path) -> tuple[tuple[str, int], ...]:
    """(name, mtime) of every tag folder: a step written (files renamed in) or pruned changes its folder's mtime."""
    root = RunFolder(run_dir).media_dir(IMAGES)
    if not safe_files.is_real_dir(root):
        return ()
    try:
        return tuple(sorted((p.name, p.lstat().st_mtime_ns) for p in root.iterdir() if safe_files.is_real_dir(p)))
    except OSError:
        return ()


@functools.lru_cache(maxsize=32)
def _image_steps(run_dir: str, signature: tuple) -> dict[str, list[media_store.ImageStep]]:
    return media_store.image_steps(Path(run_dir))


def image_steps(run_dir: Path) -> dict[str, list[media_store.ImageStep]]:
    """media_store.image_steps, re-read only when a tag folder changed (a live page reruns every few seconds,
    and a tag keeps up to media_store.KEEP_STEPS steps, a JSON file each)."""
    signature = _signature(run_dir)
    return _image_steps(str(run_dir), signature) if signature else {}


def draw(run_dir: Path, key: str) -> set[str]:
    """Every image key logged per step; returns their file names (media_store.tag_file) so the caller can
    leave out their latest-image copies (artifacts/images/<tag>.png)."""
    found = image_steps(Path(run_dir))
    for tag, items in found.items():
        tag_panel(tag, items, key)
    return {media_store.tag_file(tag) for tag in found}
