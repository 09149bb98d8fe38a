"""A run's thinned columns saved next to its cache: a server's first open of a big run reads one small file.

`MetricTable` holds at most ~20,000 rows of a run (first/min/max/last of step buckets). Building
them from the cache means reading and thinning every part: ~0.3 s for a million records on an
idle machine, seconds on a busy one, and ten times that for a compare of ten runs. The cache
builder (runstore/metrics/cache_builder.py) therefore saves the thinned columns as
`metrics.cache/overview.arrow` (about 1.5 MB): one float64 column per key, null where the record
lacked it, and in its schema metadata the byte offset and record count it covers and the file's
identity. A table that starts from it reads only what the file gained since. A replaced or
truncated metrics.jsonl, or another row bound, ignores it. No Streamlit here.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc

from runstore import line_reader, nofollow, safe_files
from runstore.metrics import metric_cache
from runstore.run_folder import RunFolder

NAME = "overview.arrow"
VERSION = 1


def save(
    run_dir: Path, values: dict[str, np.ndarray], present: dict[str, np.ndarray], end: int, records: int, max_rows: int
) -> bool:
    """Write the columns (atomically) as covering `end` bytes and `records` records; False if it cannot."""
    run_dir = Path(run_dir)
    folder = RunFolder(run_dir)
    ident, cache = line_reader.identity(folder.records_path), folder.metrics_cache
    if ident is None or ident["size"] < end or not safe_files.is_real_dir(cache):
        return False
    meta = {k: ident[k] for k in ("dev", "ino", "head")} | {
        "end": end,
        "records": records,
        "max_rows": max_rows,
        "version": VERSION,
    }
    table = pa.table({k: pa.array(v, pa.float64(), mask=~present[k]) for k, v in values.items()})
    table = table.replace_schema_metadata({"jaxdash": json.dumps(meta)})
    try:
        nofollow.replace(cache, NAME, metric_cache.ipc_writer(table), fsync=False)  # never through a link
    except OSError:
        return False
    return True


def covered(run_dir: Path) -> int:
    """Bytes of metrics.jsonl the saved overview covers (0 without a valid one); reads only its schema."""
    found = _read(Path(run_dir), None, schema_only=True)
    return found[1]["end"] if found else 0


def load(run_dir: Path, max_rows: int) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], int, int] | None:
    """(values, present, end, records) of a saved overview still valid for run_dir/metrics.jsonl, else None."""
    found = _read(Path(run_dir), max_rows)
    if found is None:
        return None
    table, meta = found
    values, present = {}, {}
    for name, col in zip(table.column_names, table.columns, strict=True):
        present[name] = np.asarray(col.is_valid())
        values[name] = col.to_numpy(zero_copy_only=False).astype(float)
    return values, present, meta["end"], meta["records"]


def _read(run_dir: Path, max_rows: int | None, schema_only: bool = False) -> tuple[pa.Table | None, dict] | None:
    folder = RunFolder(run_dir)
    path, ident = folder.metrics_cache / NAME, line_reader.identity(folder.records_path)
    if ident is None or not safe_files.is_regular(path):
        return None
    try:
        with pa.memory_map(str(path)) as source:
            reader = ipc.open_file(source)
            meta = json.loads((reader.schema.metadata or {}).get(b"jaxdash", b"{}"))
            table = None if schema_only else reader.read_all()
    except (OSError, ValueError, pa.ArrowInvalid):
        return None
    if (
        not isinstance(meta.get("end"), int)
        or not isinstance(meta.get("records"), int)
        or line_reader.saved_replaced(meta, ident, meta["end"])
        or meta.get("version") != VERSION
        or (max_rows is not None and meta["max_rows"] != max_rows)
    ):
        return None
    return table, meta
