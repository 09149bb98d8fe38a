"""Logged text rendered as TensorBoard's text plugin renders it (markdown, sanitized, newest step first, a step
picker), small images drawn pixel-sharp, histogram titles clear of the chart's toolbar.

A run folder written through runstore.media_store (as the client and the logdir mirror write it); Run detail
driven with AppTest; the rendered text panel checked in Chromium for scripts and images from other hosts."""

from __future__ import annotations

import io
import re
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from streamlit.runtime.memory_media_file_storage import _calculate_file_id

from components import figure_style, histogram_figures
from dashboard.panels import image_steps_panel
from runstore import media_store
from tests.apptest_pages import app, fake_run

HOSTILE = (
    "**bold** <script>alert(1)</script> <img src=http://evil.example/pixel.png> "
    "![tracker](http://evil.example/t.png) [ok](http://evil.example/login)"
)
TEXTS = [(10, "old text at *ten*"), (20, "twenty"), (30, "thirty"), (40, "forty"), (50, "fifty"), (60, HOSTILE)]
DIGIT = (np.eye(8, dtype=np.uint8) * 255)[:, ::-1]  # 8x8: drawn 160 wide


def _run(root: Path) -> Path:
    d = fake_run(root, name="texts")
    for step, text in TEXTS:
        media_store.append_text(d, "notes", step, text)
    media_store.write_image_step(d, "digit", 5, [media_store.png_bytes(DIGIT)])
    return d


def _text_html(at) -> str:  # noqa: ANN001 - an AppTest
    (body,) = [h.proto.body for h in at.get("html") if "jaxdash-text-step" in h.proto.body]
    return body


def test_text_panel_renders_markdown_newest_first_and_sanitized(runs_root: Path) -> None:
    d = _run(runs_root)
    at = app("views/detail.py", run=d.name)
    body = _text_html(at)
    steps = [int(s.replace(",", "")) for s in re.findall(r">step ([\d,]+)<", body)]
    assert steps == [60, 50, 40, 30, 20], "the newest steps, newest first"
    assert "<strong>bold</strong>" in body  # markdown rendered
    assert "<script" not in body and "&lt;script&gt;" in body  # raw HTML shown as text, never run
    assert "<img" not in body and "[image: tracker (http://evil.example/t.png)]" in body  # named, never fetched
    assert re.search(r'<a href="http://evil\.example/login"[^>]*>ok</a> \(http://evil\.example/login\)', body)
    (picker,) = [s for s in at.select_slider if "10" in s.options]
    assert picker.value == 60
    picker.set_value(10).run()
    older = _text_html(at)
    assert re.findall(r">step ([\d,]+)<", older) == ["10"] and "old text at <em>ten</em>" in older


def test_small_image_is_upscaled_with_nearest_neighbour(runs_root: Path) -> None:
    d = _run(runs_root)
    at = app("views/detail.py", run=d.name)
    (image,) = [i for i in at.get("image") if any("digit" in c for c in i.captions)]
    upscaled = io.BytesIO()  # each pixel a 20x20 square: what the browser then draws without scaling
    Image.fromarray(np.kron(DIGIT, np.ones((20, 20), np.uint8))).save(upscaled, format="PNG")
    assert image.value == [f"/mock/media/{_calculate_file_id(upscaled.getvalue(), 'image/png')}.png"]
    assert image_steps_panel.sharp(media_store.png_bytes(DIGIT))[1] == 160  # drawn at its own width


def test_histogram_titles_sit_below_the_toolbar() -> None:
    hist = (1234, [1.0, 3.0, 2.0], [0.0, 1.0, 2.0, 3.0])
    tag = "train/grads/a_very_long_layer_name_that_reaches_the_right_edge/kernel"
    for fig in (
        histogram_figures.step_bars(hist, tag),
        histogram_figures.offsets([hist, (1300, *hist[1:])], tag),
        histogram_figures.distribution([hist, (1300, *hist[1:])], tag),
    ):
        title, top = fig.layout.title, fig.layout.margin.t
        assert (title.yref, title.y, title.yanchor) == ("paper", 1, "bottom"), "on the plot's top edge"
        font = title.font.size or fig.layout.template.layout.title.font.size or 17
        assert top - title.pad.b - font * 1.3 >= figure_style.MODEBAR_PX, "its band is clear of the toolbar"


@pytest.mark.browser
def test_rendered_text_panel_has_no_script_and_no_remote_image(served: tuple, tab: object) -> None:
    srv, root = served
    d = _run(root)
    page = tab
    page.goto(f"{srv.url}/detail?run={d.name}")
    panel = page.locator(".jaxdash-text-step").first
    panel.wait_for(timeout=60_000)
    assert "bold" in panel.locator("strong").inner_text()
    found = page.evaluate(
        """() => [...document.querySelectorAll('.jaxdash-text-step')].map(e => ({
            scripts: e.querySelectorAll('script').length,
            images: [...e.querySelectorAll('img')].map(i => i.src),
            links: [...e.querySelectorAll('a')].map(a => [a.innerText, a.nextSibling && a.nextSibling.textContent]),
        }))"""
    )
    assert found and all(f["scripts"] == 0 and f["images"] == [] for f in found)
    assert ["ok", " (http://evil.example/login)"] in found[0]["links"]
    sharp = "() => [...document.querySelectorAll('img')].filter(i => i.naturalWidth === 160).map(i => i.naturalHeight)"
    page.wait_for_function(f"({sharp})().length > 0", timeout=30_000, polling=200)
    assert page.evaluate(sharp) == [160], "the 8x8 digit arrives upscaled, not stretched by the browser"
