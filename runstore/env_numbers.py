"""Numbers read from environment variables ($JAXDASH_SCAN_UNROLL, $JAXDASH_HEARTBEAT_S, ...), one way everywhere.

A bad value is one line naming the variable, the value and what it accepts ("$JAXDASH_SCAN_UNROLL='²':
give a positive whole number, or unset it (default 1)"), never int()'s bare "invalid literal". Only
ASCII digits count: "²" and "٣" pass `str.isdigit()` but are no number a user meant. `env_number`
raises that line; `env_number_or_default` says it once as a warning and goes on with the default
(for settings read at import time or in a background thread, where raising would be a traceback).
"""

from __future__ import annotations

import logging
import math
import os
import re

logger = logging.getLogger("jaxdash")
_WHOLE = re.compile(r"[+-]?[0-9]+")
_NUMBER = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")
_SAID: set[str] = set()


class EnvNumberError(ValueError):
    """An environment variable that should hold a number does not; str() is one line naming it and the fix."""


def _accepts(integer: bool, minimum: float | None, positive: bool) -> str:
    kind = "whole number" if integer else "number"
    if positive or (integer and minimum == 1):
        return f"a positive {kind}"
    return f"a {kind} >= {minimum:g}" if minimum is not None else f"a {kind}"


def env_number(
    name: str, default: float, *, integer: bool = False, minimum: float | None = None, positive: bool = False
) -> float:
    """$name as a number (an int when `integer`), `default` when unset or blank.

    Raises:
      EnvNumberError: not a (whole) number in ASCII digits, not finite, below `minimum`, or not above 0
        when `positive`; one line naming the variable and what it accepts.
    """
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    value: float | None = None
    if (_WHOLE if integer else _NUMBER).fullmatch(raw):
        value = int(raw) if integer else float(raw)
    if (
        value is None
        or not math.isfinite(value)
        or (minimum is not None and value < minimum)
        or (positive and value <= 0)
    ):
        accepts = _accepts(integer, minimum, positive)
        raise EnvNumberError(f"${name}={raw[:40]!r}: give {accepts}, or unset it (default {default:g})")
    return value


def env_number_or_default(
    name: str, default: float, *, integer: bool = False, minimum: float | None = None, positive: bool = False
) -> float:
    """As `env_number`, but a bad value is a warning (once per variable and value) and `default` is used."""
    try:
        return env_number(name, default, integer=integer, minimum=minimum, positive=positive)
    except EnvNumberError as exc:
        if str(exc) not in _SAID:
            _SAID.add(str(exc))
            logger.warning("jaxdash: %s; using %g", exc, default)
        return default
