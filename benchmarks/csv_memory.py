"""CSV download of a big run: peak memory of producing it, the old way against ours.

  .venv/bin/python benchmarks/csv_memory.py [--records 1000000]

Writes one run of `--records` metric records (benchmarks/scale.py's records), then produces its
CSV in a fresh process per way and prints each process's peak resident memory, its resident
memory once its imports were done, and the seconds it took:
  * old: every record as a dict (RunFolder.records), pandas.DataFrame(records).to_csv();
  * ours, no cache yet: runstore.metrics.metric_csv.write_csv, building metrics.cache/ on the way;
  * ours, cache built (the dashboard's background builder has cached a finished run);
  * download button: the whole CSV as bytes (metric_csv.metrics_csv), as a download button holds
    it in Streamlit's media store (served without dashboard/server_app.py's route);
  * streamed route: metric_csv.iter_csv's chunks, each written out and dropped as the route sends it.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from runstore import run_folder
from runstore.run_folder import RunFolder

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

WAYS = ("old", "ours", "ours", "button", "route")
LABELS = (
    "old: DataFrame(records).to_csv()",
    "ours, building the cache",
    "ours, cache built",
    "download button: bytes held",
    "streamed route: chunks sent",
)


def _peak_mb() -> float:
    """This process's peak resident memory (VmHWM: ru_maxrss would carry the parent's over from fork)."""
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmHWM:")) / 1024


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() / 2**20


def produce(way: str, run_dir: Path, out: Path) -> dict:
    """Write the CSV of run_dir the given way: peak and post-import resident memory (MB), seconds."""
    import pandas as pd  # noqa: F401 - imported before the baseline by both ways

    from runstore.metrics import metric_csv

    base = _rss_mb()
    t = time.perf_counter()
    if way == "old":
        records, _ = RunFolder(run_dir).records(0)
        text = pd.DataFrame(records).to_csv(index=False)
        out.write_text(text)
        rows = len(records)
    elif way == "button":
        data = metric_csv.metrics_csv(run_dir)
        out.write_bytes(data)
        rows = data.count(b"\n") - 1
    elif way == "route":
        rows = -1
        with open(out, "wb") as f:
            for chunk in metric_csv.iter_csv(run_dir):
                f.write(chunk)
                rows += chunk.count(b"\n")
    else:
        rows = metric_csv.write_csv(run_dir, out)
    return {"rows": rows, "peak_mb": _peak_mb(), "base_mb": base, "s": time.perf_counter() - t}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--way", choices=sorted(set(WAYS)), help=argparse.SUPPRESS)  # one measurement (child)
    ap.add_argument("--run-dir", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.way:
        print(json.dumps(produce(args.way, args.run_dir, args.run_dir / f"{args.way}.csv")))
        return
    from benchmarks.scale import write_metrics

    tmp = Path(tempfile.mkdtemp(prefix="jaxdash-csv-"))
    try:
        write_metrics(tmp / run_folder.RECORDS, args.records)
        size = (tmp / run_folder.RECORDS).stat().st_size / 2**20
        print(f"run of {args.records:,} records, metrics.jsonl {size:.0f} MB")
        for way, label in zip(WAYS, LABELS, strict=True):
            cmd = [sys.executable, __file__, "--way", way, "--run-dir", str(tmp)]
            got = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
            csv_mb = (tmp / f"{way}.csv").stat().st_size / 2**20
            print(
                f"{label:34s} peak {got['peak_mb']:5.0f} MB (after imports {got['base_mb']:.0f} MB), "
                f"{got['s']:5.1f} s, {got['rows']:,} rows, CSV {csv_mb:.0f} MB",
                flush=True,
            )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
