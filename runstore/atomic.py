"""Files that readers poll while a process writes them: atomic JSON replaces and fsync'd appends.

A reader sees the old or the new file, never half of one; a failed write leaves no temp file and
no half-written line, and its OSError names the file (for messages like "No space left on device
writing runs/<id>/metrics.jsonl"). No JAX here: the dashboard imports this module.
"""

from __future__ import annotations

import contextlib
import errno
import json
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from runstore.safe_files import create_new, open_regular, replace_with, temp_name


def atomic_write_json(path: Path, data: Any, indent: int | None = 1) -> None:
    """Write JSON so a reader sees the old or the new file, never half of one.

    `indent=None` for large machine-read documents (tables): Python's JSON encoder is much
    slower with an indent (a 16-image table took 40 ms).
    """
    tmp = temp_name(Path(path))
    text = strict_dumps(data, indent=indent)
    try:
        with os.fdopen(create_new(tmp), "w") as f:  # never written through a link planted in the folder
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)  # never leave temp files behind
        if exc.errno == errno.ENOSPC and path.exists():
            _rewrite_in_place(path, text)  # a full disk: the old file's own blocks still fit the new text
            return
        raise OSError(exc.errno, exc.strerror, str(path)) from exc


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write `data` so a reader sees the old or the new file, never half of one (fsync'd, never through a link).

    Raises:
      OSError: naming `path` (e.g. a full disk); no temp file is left behind.
    """

    def write(f: Any) -> None:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())

    replace_with(path, write)


def _rewrite_in_place(path: Path, text: str) -> None:
    """Overwrite a small file in place (not atomic; the fallback when a full disk refuses a temp file)."""
    try:
        with open(path, "r+") as f:
            f.write(text)
            f.truncate()
            f.flush()
            os.fsync(f.fileno())
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, str(path)) from exc


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
    """Parsed JSON, or `default` if missing or unreadable."""
    try:
        with open_regular(path) as f:  # never through a link, never a FIFO (runstore/safe_files.py)
            return json.load(f)
    except (OSError, ValueError, RecursionError):
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


def append_metrics(run_dir: Path, records: list[Mapping[str, Any]]) -> None:
    """Append records to metrics.jsonl and fsync, so a kill loses at most this chunk."""
    if records:
        append_metric_lines(run_dir, metric_lines(records))


def append_metric_lines(run_dir: Path, lines: str) -> None:
    """Append ready-made metrics.jsonl lines and fsync; a failure leaves no half-written line."""
    if not lines:
        return
    path = Path(run_dir) / "metrics.jsonl"
    data = lines.encode()
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, str(path)) from exc
    size = os.fstat(fd).st_size
    try:
        view = memoryview(data)
        while view:  # unbuffered: nothing is left in a buffer to land after a failure
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.ftruncate(fd, size)  # never keep a half-written line
        raise OSError(exc.errno, exc.strerror, str(path)) from exc
    finally:
        os.close(fd)
