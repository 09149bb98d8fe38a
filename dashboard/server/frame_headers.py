"""Headers on every HTTP response: no page of another site may frame the dashboard or make it fetch images elsewhere.

Clickjacking: a page on another host could show the dashboard in a transparent frame and have the
user click Start or Stop in it; the Host and Origin checks (host_check) do not see it, since the
frame's own requests are same-origin. `X-Frame-Options: SAMEORIGIN` (older browsers) and
`Content-Security-Policy: frame-ancestors 'self'` make the browser refuse to draw any response of
ours in another site's frame; our own pages may still frame our own responses.

Remote content: run names, notes, tags and metric names are shown as text, and figures lose
remote `layout.images` (#36), but a page shows data written by any script. `img-src` is the second
line: images come from the dashboard itself, `data:` and `blob:` URLs (plotly, Streamlit's media),
and Google's font server, which Streamlit asks for its Material icons. A run's data can never make
the browser fetch an image from another host (with the dashboard's URL as its Referer).
"""

from __future__ import annotations

from collections.abc import Callable, MutableMapping
from typing import Any

POLICY = "frame-ancestors 'self'; img-src 'self' data: blob: https://fonts.gstatic.com"
HEADERS = [(b"x-frame-options", b"SAMEORIGIN"), (b"content-security-policy", POLICY.encode())]

Scope = MutableMapping[str, Any]


class FrameHeaders:
    """ASGI middleware: HEADERS added to every HTTP response (pages, static files, component files, our routes)."""

    def __init__(self, app: Callable) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Callable, send: Callable) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                # A second CSP header is enforced beside one the response has; a second X-Frame-Options is not.
                names = {k.lower() for k, _ in message.get("headers", [])}
                extra = [(k, v) for k, v in HEADERS if k not in names or k == b"content-security-policy"]
                message = {**message, "headers": [*message.get("headers", []), *extra]}
            await send(message)

        await self.app(scope, receive, send_with_headers)
