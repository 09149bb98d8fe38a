"""Images a run logged at every step (W&B's `wandb.Image`, lists of them, captions): a step slider per key.

Read through the read interface (`provider.image_steps`: each step's images and captions). The slider
follows the newest step while the run logs more, until the user moves it. Captions (the tag and step where
an image has none) are escaped (safe_text.md): a run's text is data, never markdown that could load something.
"""

from __future__ import annotations

import hashlib
import io
from pathlib import Path

import streamlit as st
from PIL import Image

from dashboard.panels import safe_text
from dashboard.reading import provider

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


def tag_panel(tag: str, items: list[provider.ImageStep], key: str) -> None:
    """One image key: its step slider, then every image of the chosen step with its caption."""
    with st.container(border=True):
        st.text(tag)
        item = items[step_index(widget_key(key, tag), [i.step for i in items])]
        st.caption(f"step {item.step:,} · {len(item.paths)} image{'s' if len(item.paths) != 1 else ''}")
        step_images(item, tag)


def step_images(item: provider.ImageStep, tag: str, columns: int = COLUMNS) -> None:
    """Every image of one step of an image key, `columns` a row, with its caption (escaped)."""
    cols = st.columns(min(columns, len(item.paths)))
    for i, (path, caption) in enumerate(zip(item.paths, item.captions, strict=True)):
        with cols[i % len(cols)]:
            try:
                data = provider.image_bytes(path, MAX_IMAGE_BYTES + 1)
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


def image_steps(run_dir: Path) -> dict[str, list[provider.ImageStep]]:
    """Every image key logged per step (`provider.image_steps`: re-read only when a tag folder changed)."""
    return provider.image_steps(run_dir)


def draw(run_dir: Path, key: str) -> set[str]:
    """Every image key logged per step; returns their file names (provider.tag_file) so the caller can
    leave out their latest-image copies (artifacts/images/<tag>.png)."""
    found = image_steps(Path(run_dir))
    for tag, items in found.items():
        tag_panel(tag, items, key)
    return {provider.tag_file(tag) for tag in found}
