"""URL paths the pages build themselves, under the server's base URL path (server.baseUrlPath)."""

from __future__ import annotations

from streamlit import config


def under_base(*parts: str) -> str:
    """ "/<base>/<parts...>", or "/<parts...>" when the server has no base URL path."""
    base = (config.get_option("server.baseUrlPath") or "").strip("/")
    return "/" + "/".join([*([base] if base else []), *parts])
