"""Colour arithmetic for the tests' own checks of what the page draws, computed here, not by the code under test:
a CSS colour's RGB, WCAG's contrast ratio of two colours, and CIELAB (for the distance two colours read apart)."""

from __future__ import annotations


def rgb(css: str) -> tuple[float, float, float]:
    """(r, g, b) in 0-255 of "#rrggbb" or "rgb(r, g, b)" / "rgba(...)"."""
    if css.startswith("#"):
        r, g, b = (int(css[i : i + 2], 16) for i in (1, 3, 5))
        return float(r), float(g), float(b)
    r, g, b = (float(v) for v in css[css.index("(") + 1 : css.index(")")].split(",")[:3])
    return r, g, b


def _linear(css: str) -> list[float]:
    return [v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4 for v in (c / 255 for c in rgb(css))]


def contrast(a: str, b: str) -> float:
    """WCAG's contrast ratio of two CSS colours (1 to 21)."""

    def lum(css: str) -> float:
        r, g, b = _linear(css)
        return 0.2126 * r + 0.7152 * g + 0.0722 * b

    hi, lo = sorted((lum(a), lum(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def cielab(css: str) -> tuple[float, float, float]:
    """CIELAB (D65) of a CSS colour: the Euclidean distance of two is delta E 1976."""
    r, g, b = _linear(css)
    x = (0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047
    y = 0.2126 * r + 0.7152 * g + 0.0722 * b
    z = (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883
    fx, fy, fz = (v ** (1 / 3) if v > 0.008856 else 7.787 * v + 16 / 116 for v in (x, y, z))
    return 116 * fy - 16, 500 * (fx - fy), 200 * (fy - fz)
