"""A run's metrics as CSV, written from the columnar cache one ~4 MB part at a time (no Streamlit here).

The old download built `pandas.DataFrame(records)` of every record (about 1.5 GB of server memory
for a million records), then its CSV text. Here the cache (`runstore.metrics.metric_cache`, extended
over the whole file first) is read part by part, memory-mapped, and each part goes through
pyarrow's CSV writer into a file, so producing the CSV costs one part's memory whatever the
run's length. Every metric is a float64 column: integers print without a decimal point, a
value that was not a number ("nan", a string) prints as nan, a record without a key leaves its
cell empty. Columns are in the order the file first names them.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.ipc as ipc

from runstore import line_reader
from runstore.metrics import metric_cache
from runstore.run_folder import RunFolder


def _columns(run_dir: Path, parts: list[metric_cache.Part]) -> list[str]:
    """Every column of every part, in first-seen order (only the parts' schemas are read)."""
    names: dict[str, None] = {}
    for part in parts:
        with metric_cache.open_part(run_dir, part) as source:
            names.update(dict.fromkeys(ipc.open_file(source).schema.names))
    return list(names)


def _conform(table: pa.Table, columns: list[str]) -> pa.Table:
    """`table` with exactly `columns`, in that order (a column it lacks: all empty)."""
    n = table.num_rows
    return pa.table({c: table.column(c) if c in table.column_names else pa.nulls(n, pa.float64()) for c in columns})


def _uncached(run_dir: Path) -> list[pa.Table]:
    """The file parsed piece by piece, for a folder that cannot hold a cache (read-only, full disk)."""
    tables, offset = [], 0
    while True:
        data, end = line_reader.read_lines(RunFolder(run_dir).records_path, offset, metric_cache.PART_BYTES)
        if end == offset:
            return tables
        tables.append(metric_cache.parse(data))
        offset = end


def _chunks(run_dir: Path) -> Iterator[tuple[bytes | pa.Buffer, int]]:
    """Every record of run_dir/metrics.jsonl as CSV: (the header, 0), then (one part's rows in Arrow's buffer,
    their count): a file takes the buffer as it is, a stream its copy as bytes.

    Memory: one cached part at a time. A folder without a usable cache is parsed into a list of
    per-piece Arrow tables instead (columnar, a tenth of the records' size as Python objects).
    """
    run_dir = Path(run_dir)
    parts = metric_cache.sync(run_dir, force=True)
    records = RunFolder(run_dir).records_path
    size = records.stat().st_size if records.exists() else 0
    cached = bool(parts) or size == 0
    tables = [] if cached else _uncached(run_dir)
    columns = _columns(run_dir, parts) if cached else list(dict.fromkeys(c for t in tables for c in t.column_names))
    header = io.StringIO()
    csv.writer(header).writerow(columns)  # the header as Python's csv writes it: quoted only where needed
    yield header.getvalue().encode(), 0
    if not columns:
        return
    options = pcsv.WriteOptions(include_header=False, quoting_style="needed")
    for item in parts if cached else tables:
        table = metric_cache.read_part(run_dir, item) if cached else item
        chunk = pa.BufferOutputStream()
        pcsv.write_csv(_conform(table, columns), chunk, write_options=options)
        yield chunk.getvalue(), table.num_rows


def iter_csv(run_dir: Path) -> Iterator[bytes]:
    """The CSV in chunks (the header, then one cached part's rows each): what the download route streams."""
    return (chunk if isinstance(chunk, bytes) else chunk.to_pybytes() for chunk, _ in _chunks(Path(run_dir)))


def write_csv(run_dir: Path, out: Path) -> int:
    """Every record of run_dir/metrics.jsonl as CSV into the file `out`; returns the rows written."""
    rows = 0
    with open(out, "wb") as f:
        for chunk, n in _chunks(Path(run_dir)):
            f.write(chunk)
            rows += n
    return rows


def metrics_csv(run_dir: Path) -> bytes:
    """Every record as CSV bytes, for a download button's deferred data (when the app is served
    without dashboard/server_app.py's streaming route).

    Streamlit (1.67) keeps what a download button serves in its in-memory media store, so the
    finished CSV is held once; the table it is made from never is.
    """
    return b"".join(iter_csv(Path(run_dir)))
