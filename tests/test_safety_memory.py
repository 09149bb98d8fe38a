"""Memory stays bounded however long metrics.jsonl grows: the dashboard keeps thinned numpy columns.

The full-size measurement (1,000,000 lines, peak RSS of the pages) is in the safety report; here
a 100,000-line file must be read within a memory budget a list of dicts could never meet, and
the thinned columns must still hold what the charts show: the whole step range, the spikes,
every point of a rarely logged tag, the latest values.
"""

from __future__ import annotations

import json
import os
import tracemalloc
from pathlib import Path

import numpy as np

from runstore import run_folder
from runstore.metrics.metric_csv import metrics_csv
from runstore.metrics.metric_table import MetricTable
from runstore.run_folder import RunFolder

N = 100_000
SPIKE_STEP = 61_234


def write_metrics(run_dir: Path, start: int, stop: int) -> None:
    with open(run_dir / run_folder.RECORDS, "a") as f:
        for i in range(start, stop):
            rec = {"step": i, "wall": i * 1e-3, "ts": 1.7e9 + i, "train/loss": 1.0 / i, "train/acc": 1 - 1 / i}
            if i == SPIKE_STEP:
                rec["train/loss"] = 50.0
            if i % 10_000 == 0:
                rec["test/acc"] = i / N
            f.write(json.dumps(rec) + "\n")


def test_a_long_metrics_file_is_read_into_bounded_columns_that_keep_what_charts_show(tmp_path: Path) -> None:
    warm = tmp_path / "warm"
    warm.mkdir()
    write_metrics(warm, 1, 100)
    MetricTable(max_rows=20_000).update(warm)  # first-use imports (pyarrow's cache) are not the table's memory
    write_metrics(tmp_path, 1, N + 1)
    tracemalloc.start()
    table = MetricTable(max_rows=20_000).update(tmp_path)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.reset_peak()
    records, _ = RunFolder(tmp_path).records()  # what the pages used to hold: every record as a dict
    _, as_dicts = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del records
    # The table parses 1 MB pieces and keeps ~1 MB of columns; the dicts grow with the file.
    assert peak < 40 * 2**20 and peak < as_dicts / 2.5, f"peak {peak / 2**20:.0f} MB vs {as_dicts / 2**20:.0f} MB"
    assert table.records == N and len(table) <= 20_000
    steps, loss = table.series("train/loss")
    assert steps[0] == 1 and steps[-1] == N  # the whole run, not only its end
    assert np.all(np.diff(steps) > 0)
    assert loss.max() == 50.0 and SPIKE_STEP in steps  # the spike survives thinning
    assert list(table.series("test/acc")[0]) == list(range(10_000, N + 1, 10_000))  # every rare point
    assert table.last("train/loss") == 1.0 / N and table.last("test/acc") == 1.0
    assert table.tags() == {"train/loss", "train/acc", "test/acc"}  # "ts" is not kept


def test_incremental_reads_a_replaced_file_again_and_waits_for_a_half_written_line(tmp_path: Path) -> None:
    write_metrics(tmp_path, 1, 101)
    table = MetricTable().update(tmp_path)
    offset = table.offset
    with open(tmp_path / run_folder.RECORDS, "a") as f:
        f.write('[1, 2]\n"text"\n{"step": 101, "train/lo')  # not objects, then a write in progress
    table.update(tmp_path)
    assert table.records == 100 and table.offset > offset
    with open(tmp_path / run_folder.RECORDS, "a") as f:
        f.write('ss": 0.5}\n')
    assert table.update(tmp_path).last("train/loss") == 0.5 and table.records == 101
    replacement = tmp_path / "new.jsonl"  # e.g. a resume truncating past records: a new file
    replacement.write_text('{"step": 1, "train/loss": 9.0}\n')
    os.replace(replacement, tmp_path / run_folder.RECORDS)
    assert table.update(tmp_path).records == 1 and table.last("train/loss") == 9.0


def test_csv_download_has_every_record(tmp_path: Path) -> None:
    write_metrics(tmp_path, 1, 30_001)
    RunFolder(tmp_path).append_records([{"step": 30_001, "extra/tag": 1.0}])
    lines = metrics_csv(tmp_path).decode().splitlines()
    assert len(lines) == 30_002 and lines[0].split(",")[-1] == "extra/tag"
