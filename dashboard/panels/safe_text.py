"""Run data shown as text: a run's name, notes, tags, metric names and messages never become markdown that loads
something, and its figures never load images from other hosts.

Anything a run wrote (a user's script writes its name, tags, notes and metric names) reaches
Streamlit's markdown in captions, subheaders and widget labels, which draw `![x](http://host/x.png)`
as an image: the browser would fetch it from that host when the run is viewed, telling it that the
run was looked at and from where (the Referer), and draw `[ok](http://evil.example)` as a link whose text
hides its host. `md` escapes every markdown character, so the text shows as it was written; `code` puts it
in a code span. Every page draws a run's, a file's or a peer's text through one of them (or st.text, st.code
and table cells, which draw no markdown).

Escapes are not enough for what Streamlit's markdown finds in text after the escapes are resolved: GitHub's
autolinks (`http://x`, `www.x`, `a@x` become links) and emoji shortcodes (`:smile:`). There `md` puts a word
joiner (U+2060, invisible, no break) after the `:` of a scheme or shortcode, after `@` and inside `www.`, so
no such pattern is whole. `without_remote_images` drops a figure's
`layout.images` whose source is not a `data:` URL (plotly fetches the others). The pages' CSP
`img-src` (dashboard/server/frame_headers.py) blocks whatever is missed here.
"""

from __future__ import annotations

import re
from typing import Any

# What makes markdown of text: images and links, emphasis, code, HTML and entities, math, and a colon
# before a letter (Streamlit's ":blue[...]" directives). Nothing else: "train/loss"
# stays its own label and "config.json: not valid JSON" its own message.
_SPECIAL = re.compile(r"([\\`*_\[\]()<>#!|~$&]|:(?=[A-Za-z]))")
_LINE_START = re.compile(r"^([ \t]*)([-+=]|\d+[.)])", re.MULTILINE)  # a list item, a heading's underline
JOINER = "\u2060"  # WORD JOINER: invisible, breaks no line, and is neither space nor punctuation to GFM
# Where markdown finds links and shortcodes in text once its escapes are resolved: a scheme's or shortcode's
# colon (`http://`, `:smile:`, `:material/x:`), an address's `@`, `www.`, and Streamlit's arrows (" -> ").
_UNESCAPED = re.compile(r"(:(?=[\w+\-/])|@|(?i:www)(?=\.)|(?<!\S)[-<>~](?=(?:->|[-=>])(?:\s|$)))")


def md(text: Any) -> str:
    """`text` (any value, as str) escaped for st.markdown, st.caption, st.info/warning/error, labels and help:
    shown exactly as written (word joiners aside), never a link, image, emoji or format."""
    text = _UNESCAPED.sub(lambda m: m.group(1) + JOINER, str(text))
    text = _SPECIAL.sub(r"\\\1", text)
    return _LINE_START.sub(lambda m: m.group(1) + m.group(2)[:-1] + "\\" + m.group(2)[-1], text)


def plain(shown: str) -> str:
    """What `md(text)` shows: `text` again (escapes and word joiners dropped); for tests and comparisons."""
    return re.sub(r"\\(.)", r"\1", shown.replace(JOINER, ""), flags=re.DOTALL)


def code(text: Any) -> str:
    """`text` as an inline code span, fenced with more backticks than it holds (CommonMark): code is never a link."""
    text = re.sub(r"[\r\n]", " ", str(text))
    fence = "`" * (max((len(r) for r in re.findall("`+", text)), default=0) + 1)
    return f"{fence} {text} {fence}"


def _local_images(images: Any) -> tuple[list[Any], bool]:
    """(the images whose source is a data: URL, whether any was dropped)."""
    if not images:
        return [], False
    if not isinstance(images, list | tuple):
        return [], True  # not plotly's shape: nothing of it is drawn
    kept = [im for im in images if str(_get(im, "source") or "").startswith("data:")]
    return kept, len(kept) != len(images)


def _get(obj: Any, name: str) -> Any:
    return obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)


def without_remote_images(fig: Any) -> Any:
    """`fig` (a plotly Figure or its dict) without layout images (its own or its template's) from other hosts.

    Returns `fig` itself when it has none, else a copy.
    """
    layout = _get(fig, "layout")
    template = _get(layout, "template") if layout is not None else None
    own, own_cut = _local_images(_get(layout, "images") if layout is not None else None)
    tpl_layout = _get(template, "layout") if template is not None else None
    tpl, tpl_cut = _local_images(_get(tpl_layout, "images") if tpl_layout is not None else None)
    if not (own_cut or tpl_cut):
        return fig
    if isinstance(fig, dict):
        layout = dict(layout)
        layout["images"] = own
        if tpl_cut:
            layout["template"] = {**template, "layout": {**tpl_layout, "images": tpl}}
        return {**fig, "layout": layout}
    import plotly.graph_objects as go

    fig = go.Figure(fig)
    fig.layout.images = own
    if tpl_cut:
        fig.layout.template.layout.images = tpl
    return fig
