"""Scale, server side: the same runs as benchmarks/scale.py, each page's script run timed with AppTest.

  .venv/bin/python benchmarks/scale_apptest.py [--records 1000000] [--big 10] [--small 1000]

Seconds per page run in this process (no browser): the share of a page's latency the server owns,
which stays meaningful on a loaded machine where a browser's timings do not. The big runs are
first cached as the server's background builder caches them (runstore/metrics/cache_builder.py; its
time is printed), so the pages are timed as a user meets them: a first open (a fresh table per
run, read from the run's saved overview) and a rerun.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from streamlit.testing.v1 import AppTest  # noqa: E402

from benchmarks.scale import make_run, write_metrics  # noqa: E402
from runstore import run_folder
from runstore.metrics import cache_builder  # noqa: E402

APP = str(Path(__file__).resolve().parent.parent / "dashboard" / "app.py")


def page_time(page: str, **query: str) -> tuple[float, float]:
    """(first run, second run) of `page` in one AppTest session, in seconds."""
    at = AppTest.from_file(APP, default_timeout=600)
    for k, v in query.items():
        at.query_params[k] = v
    at.run()
    t = time.perf_counter()
    at.switch_page(page).run()
    first = time.perf_counter() - t
    assert not at.exception, [e.value for e in at.exception]
    t = time.perf_counter()
    at.run()
    return first, time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--big", type=int, default=10)
    ap.add_argument("--small", type=int, default=1000)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="jaxdash-scale-"))
    root = tmp / "runs"
    root.mkdir()
    os.environ["JAXDASH_RUNS"] = str(root)
    os.environ["JAXDASH_WARM_WORKER"] = "0"  # no JAX worker competing for the CPU
    write_metrics(tmp / run_folder.RECORDS, args.records)
    big = [make_run(root, f"big-{i}", tmp / run_folder.RECORDS, 0.001 * (i + 1)) for i in range(args.big)]
    for i in range(args.small):
        make_run(root, f"small-{i}", None, 0.0001 * (i + 1))
    t = time.perf_counter()
    for d in big:
        cache_builder.build(d)
    print(f"Cache build (what the background builder does, here in the foreground): {time.perf_counter() - t:.1f} s")
    for label, page in (("Live", "views/live.py"), ("Run detail", "views/detail.py")):
        first, again = page_time(page, run=big[0].name)
        print(f"{label} ({args.records:,} records): first {first:.2f} s, again {again:.2f} s")
    first, again = page_time("views/runs.py", compare=",".join(d.name for d in big))
    print(f"Compare {args.big} runs: first {first:.2f} s, again {again:.2f} s")
    first, again = page_time("views/runs.py")
    print(f"Runs page, {args.big + args.small} runs: first {first:.2f} s, again {again:.2f} s")
    print(f"Peak resident memory of this process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")
    print(f"Load average: {os.getloadavg()}")


if __name__ == "__main__":
    main()
