"""Logged text rendered as TensorBoard's text plugin renders it: markdown (tables, fenced code), sanitized.

A run's logged text is meant to be read as markdown (`writer.add_text`, a string `wandb.log`), so unlike the
run's names and messages (safe_text, escaped) it is rendered. TensorBoard's own converter does the work
(`tensorboard.plugin_util.markdown_to_safe_html`: python-markdown, then bleach with an allow-list, so raw HTML
such as `<script>` shows as text). Its allow-list still lets an `<img src="http://host/...">` through, which
the browser would fetch from that host when the page is viewed, and shows a link by its text alone, hiding
where it goes. So its output is rebuilt here, tag by tag, from an allow-list of our own: an image becomes
text naming it and its address, every link shows its real address after its text, every other tag or
attribute outside the list is dropped, and all text is escaped again. The result is safe for st.html
(which renders HTML as it is, with no markdown pass that could turn escaped text into an image again).
"""

from __future__ import annotations

import html
from html.parser import HTMLParser
from urllib.parse import urlsplit

from tensorboard.plugin_util import markdown_to_safe_html

MAX_CHARS = 100_000  # characters of one text rendered (tb_media keeps as many); the rest is cut, with a note
TAGS = frozenset(
    "ul ol li p pre code blockquote h1 h2 h3 h4 h5 h6 hr br strong em a table thead tbody td tr th".split()
)
VOID = frozenset({"br", "hr"})
SCHEMES = ("http", "https", "mailto")  # a link to anything else (javascript:, data:) keeps its text, not its href


def _address(href: str | None) -> str | None:
    """`href` when it is an absolute http(s) or mailto address, else None."""
    if not href:
        return None
    try:
        scheme = urlsplit(href).scheme.lower()
    except ValueError:
        return None
    return href if scheme in SCHEMES else None


class _Rebuild(HTMLParser):
    """Re-emits sanitized HTML from TAGS only, each link followed by its address, each image as text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.out: list[str] = []
        self.links: list[tuple[str | None, list[str]]] = []  # open <a>: (address, its text so far)

    def _text(self, text: str) -> None:
        self.out.append(html.escape(text))
        if self.links:
            self.links[-1][1].append(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "img":  # never fetched: its alt text and address instead
            src = found.get("src") or ""
            self._text(f"[image: {found.get('alt') or 'no description'} ({src})]")
        elif tag == "a":
            href = _address(found.get("href"))
            self.links.append((href, []))
            self.out.append(f'<a href="{html.escape(href)}" rel="noopener noreferrer">' if href else "<a>")
        elif tag in TAGS:
            self.out.append(f"<{tag}>")

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag == "a":
            self.handle_endtag(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag == "a" and self.links:
            href, words = self.links.pop()
            self.out.append("</a>")
            if href and "".join(words).strip() != href:  # the link's real address, whatever its text says
                self._text(f" ({href})")
        elif tag in TAGS and tag not in VOID:
            self.out.append(f"</{tag}>")

    def handle_data(self, data: str) -> None:
        self._text(data)


def to_safe_html(text: str) -> str:
    """`text` (markdown) as HTML safe to show as it is: no raw HTML, nothing fetched, every link's address shown."""
    note = ""
    if len(text) > MAX_CHARS:
        text, note = text[:MAX_CHARS], f"<p><em>(cut at {MAX_CHARS:,} characters)</em></p>"
    parser = _Rebuild()
    parser.feed(markdown_to_safe_html(text.replace("\x00", "")))
    parser.close()
    while parser.links:  # an <a> left open: close it and show its address
        parser.handle_endtag("a")
    return "".join(parser.out) + note
