"""Validation of run files: every reader checks shape and types, so one damaged run can never break a page.

A file that exists but cannot be used raises `DamagedRunFile` with a message naming the file and
what is wrong (e.g. "config.json: 'created' must be a unix time (seconds), got 'yesterday'").
No JAX here: the dashboard imports this module.
"""

from __future__ import annotations

import errno
import json
import math
from pathlib import Path
from typing import Any

from runstore import small_json
from runstore.safe_files import NOT_REGULAR

_NON_FINITE = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf, "Infinity": math.inf, "-Infinity": -math.inf}
_MAX_TIME = 1e11  # a unix time beyond year 5000 is damage, and datetime could not show it


class DamagedRunFile(ValueError):
    """A run file that exists but cannot be used; the message names the file and what is wrong."""


def _kind(v: Any) -> str:
    """How a value is described in a message, in JSON's words: 'yesterday', 5, null, true, a list."""
    if v is None or isinstance(v, bool):
        return json.dumps(v)
    if isinstance(v, (int, float, str)):
        text = repr(v)
        return text if len(text) <= 40 else text[:37] + "..."
    return {dict: "an object", list: "a list"}.get(type(v), type(v).__name__)


def load_json_object(path: Path) -> dict[str, Any] | None:
    """A run file's JSON object, read within its bounds (runstore/small_json.py); None if the file does not exist.

    Raises:
      DamagedRunFile: unreadable, over a bound (size, entries, depth), not JSON (e.g. truncated) or not an object.
    """
    path = Path(path)
    try:
        raw = small_json.read_checked(path)  # no link followed, no FIFO waited on, nothing huge parsed
    except FileNotFoundError:
        return None
    except small_json.TooLarge as exc:
        raise DamagedRunFile(f"{path.name}: {exc}; not read (a run file of jaxdash is far smaller)") from None
    except OSError as exc:
        why = "a symbolic link; run files are never read through links" if exc.errno == errno.ELOOP else None
        why = why or (NOT_REGULAR if exc.errno == errno.EINVAL else exc.strerror or type(exc).__name__)
        raise DamagedRunFile(f"{path.name}: cannot be read ({why})") from None
    if not raw.strip():
        raise DamagedRunFile(f"{path.name}: empty (truncated?)")
    try:
        data = json.loads(raw)
    except UnicodeDecodeError:
        raise DamagedRunFile(f"{path.name}: not UTF-8 text") from None
    except (ValueError, RecursionError) as exc:
        raise DamagedRunFile(f"{path.name}: not valid JSON, truncated or corrupt ({str(exc)[:80]})") from None
    if not isinstance(data, dict):
        raise DamagedRunFile(f"{path.name}: must be a JSON object, got {_kind(data)}")
    return data


def number_or_none(v: Any) -> float | int | None:
    """v as a number (the store writes non-finite floats as "nan"/"inf"), or None if it is not one."""
    if isinstance(v, bool):
        return None
    if isinstance(v, (int, float)):
        return v
    if isinstance(v, str) and v in _NON_FINITE:
        return _NON_FINITE[v]
    return None


def _check(doc: dict[str, Any], fname: str, key: str, kind: str, required: bool = False) -> None:
    """Check (and normalize in place) doc[key] against `kind`; raise DamagedRunFile naming file and field."""
    if key not in doc:
        if required:
            raise DamagedRunFile(f"{fname}: {key!r} is missing")
        return
    if doc[key] is None and not required:
        return
    v = doc[key]
    ok = True
    if kind == "str":
        ok = isinstance(v, str)
    elif kind == "int":
        ok = isinstance(v, int) and not isinstance(v, bool)
    elif kind in ("number", "finite", "time"):
        n = number_or_none(v)
        ok = n is not None and (kind == "number" or math.isfinite(n)) and (kind != "time" or 0 <= n < _MAX_TIME)
        if ok:
            doc[key] = n
    elif kind == "object":
        ok = isinstance(v, dict)
    elif kind == "str list":
        ok = isinstance(v, list) and all(isinstance(x, str) for x in v)
    elif kind == "int list":
        ok = isinstance(v, list) and all(isinstance(x, int) and not isinstance(x, bool) for x in v)
    if not ok:
        what = {
            "str": "a string",
            "int": "an integer",
            "number": "a number",
            "finite": "a finite number",
            "time": "a unix time (seconds)",
            "object": "an object",
            "str list": "a list of strings",
            "int list": "a list of integers",
        }[kind]
        raise DamagedRunFile(f"{fname}: {key!r} must be {what}, got {_kind(v)}")


# Fields the dashboard computes with; other fields pass through unchecked (the engine may add more).
CONFIG_FIELDS = {
    "run_id": "str", "name": "str", "task": "str", "config": "object", "created": "time",
    "command": "str list", "group": "str", "member": "int",
}  # fmt: skip
# Settings the page reads by name, checked only for the built-in tasks: a user's task may use the same
# names with other types (e.g. an integer `hidden`).
CONFIG_VALUES = {"regression": {"true_weight": "number", "true_bias": "number"}, "mnist": {"hidden": "int list"}}
STATUS_FIELDS = {
    "state": "str", "pid": "int", "host": "str", "started": "time", "ended": "time", "updated": "time",
    "message": "str", "step": "finite", "total_steps": "finite", "epoch": "finite", "total_epochs": "finite",
    "wall_seconds": "number", "compile_seconds": "number", "steps_per_sec": "number", "final": "object",
    "final_basis": "object", "wandb": "object", "group": "str", "member": "int", "resumed_from": "finite",
}  # fmt: skip
WANDB_FIELDS = ("mode", "requested_mode", "url", "sync_command", "dir", "error")


def validate_config(doc: dict[str, Any], file: str) -> dict[str, Any]:
    """A run's config (its file named `file` in messages: runstore.run_folder.CONFIG) checked for the fields
    readers use (numbers normalized); raises DamagedRunFile."""
    for key, kind in CONFIG_FIELDS.items():
        _check(doc, file, key, kind, required=key in ("task", "config", "created"))
    for key, kind in CONFIG_VALUES.get(doc.get("task"), {}).items():
        try:
            _check(doc["config"], file, key, kind)
        except DamagedRunFile as exc:
            raise DamagedRunFile(str(exc).replace(f"{key!r}", f"'config.{key}'", 1)) from None
    return doc


def validate_status(doc: dict[str, Any], file: str) -> dict[str, Any]:
    """A run's status (its file named `file` in messages: runstore.run_folder.STATUS) checked for the fields
    readers use (numbers normalized); raises DamagedRunFile."""
    for key, kind in STATUS_FIELDS.items():
        _check(doc, file, key, kind)
    final = doc.get("final") or {}
    for tag, v in final.items():
        n = number_or_none(v)
        if n is None:
            raise DamagedRunFile(f"{file}: 'final.{tag}' must be a number, got {_kind(v)}")
        final[tag] = n
    for tag, basis in (doc.get("final_basis") or {}).items():
        if not isinstance(basis, str):
            raise DamagedRunFile(f"{file}: 'final_basis.{tag}' must be a string, got {_kind(basis)}")
    wandb = doc.get("wandb") or {}
    for key in WANDB_FIELDS:
        if wandb.get(key) is not None and not isinstance(wandb[key], str):
            raise DamagedRunFile(f"{file}: 'wandb.{key}' must be a string, got {_kind(wandb[key])}")
    return doc
