"""Files that readers poll while a process writes them: atomic JSON replaces and fsync'd appends.

A reader sees the old or the new file, never half of one; a failed write leaves no temp file and
no half-written line, and its OSError names the file (for messages like "No space left on device
writing runs/<id>/metrics.jsonl"). No JAX here: the dashboard imports this module.
"""

from __future__ import annotations

import errno
import json
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from runstore import nofollow, small_json
from runstore.safe_files import UnsafePath


def atomic_write_json(path: Path, data: Any, indent: int | None = 1, root: Path | None = None) -> None:
    """Write JSON so a reader sees the old or the new file, never half of one (fsync'd).

    Every folder from `root` (default: the file's own folder) down is reached without following a link, and a
    link planted under the name is replaced, never written through (`runstore.nofollow`). `indent=None` for
    large machine-read documents (tables): Python's JSON encoder is much slower with an indent (a 16-image
    table took 40 ms).

    Raises:
      OSError: naming `path` (e.g. a full disk: then a small file is rewritten in place when it can be);
        UnsafePath for a linked folder on the way.
    """
    base = Path(path).parent if root is None else Path(root)
    data_bytes = strict_dumps(data, indent=indent).encode()
    try:
        nofollow.replace(base, path, data_bytes)
    except OSError as exc:
        if exc.errno == errno.ENOSPC and not isinstance(exc, UnsafePath) and os.path.lexists(path):
            nofollow.overwrite(base, path, data_bytes)  # a full disk: the old file's own blocks still fit the new text
            return
        raise


def atomic_write_bytes(path: Path, data: bytes, root: Path | None = None) -> None:
    """Write `data` so a reader sees the old or the new file, never half of one (fsync'd, never through a link;
    from `root` down as `atomic_write_json`).

    Raises:
      OSError: naming `path` (e.g. a full disk); no temp file is left behind.
    """
    nofollow.replace(Path(path).parent if root is None else Path(root), path, data)


def strict_dumps(data: Any, **kwargs: Any) -> str:
    """Strict JSON of `data`: at C speed when it is plain JSON already, else through `_jsonable`
    (NaN/inf as strings, NumPy scalars as numbers); a table of 12,544 ints took 160 ms the slow way."""
    try:
        return json.dumps(data, allow_nan=False, **kwargs)
    except (TypeError, ValueError):
        return json.dumps(_jsonable(data), allow_nan=False, **kwargs)


def _jsonable(x: Any) -> Any:
    """NaN/inf become strings so the files stay strict JSON."""
    if isinstance(x, float) and not math.isfinite(x):
        return str(x)
    if isinstance(x, Mapping):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if hasattr(x, "item") and callable(x.item):  # numpy scalars
        return _jsonable(x.item())
    return x


def read_json(path: Path, default: Any = None) -> Any:
    """Parsed JSON, or `default` if missing, unreadable or over its bounds (runstore/small_json.py: size, entries,
    depth); never through a link, never a FIFO (runstore/safe_files.py)."""
    try:
        return small_json.load(path)
    except (OSError, ValueError, RecursionError):  # small_json.TooLarge is a ValueError
        return default


def metric_lines(records: list[Mapping[str, Any]]) -> str:
    """Records as metrics.jsonl lines (strict JSON: NaN and inf as strings)."""
    return "".join(strict_dumps(r) + "\n" for r in records)


def column_lines(steps: Sequence[int], wall: float, ts: float, columns: Mapping[str, Sequence[float]]) -> str:
    """Steps given as columns as metrics.jsonl lines: what `metric_lines` writes for the records
    {"step": steps[i], "wall": wall, "ts": ts, tag: columns[tag][i], ...}, formatted in one pass."""
    template = '{"step": %d, "wall": ' + json.dumps(wall) + ', "ts": ' + json.dumps(ts)
    template += "".join(", " + json.dumps(str(tag)).replace("%", "%%") + ": %s" for tag in columns) + "}\n"
    values = []
    for column in columns.values():
        floats = [float(v) for v in column]
        if not all(map(math.isfinite, floats)):  # strict JSON, as _jsonable writes them
            floats = [v if math.isfinite(v) else f'"{v}"' for v in floats]
        values.append(floats)
    return "".join(template % row for row in zip(steps, *values, strict=True))


def append_lines(folder: Path, name: str, lines: str) -> None:
    """Append ready-made lines to folder/name and fsync; a failure leaves no half-written line
    (`RunFolder.append_record_lines` names the file).

    Raises:
      UnsafePath: the file is a link, FIFO or other non-regular file (never followed, never blocking);
        OSError naming the file (e.g. a full disk).
    """
    if lines:
        nofollow.append(folder, name, lines.encode(), fsync=True)
