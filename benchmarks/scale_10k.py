"""Ten thousand runs (#55): the pages in a real browser against a real server, the index, and its freshness.

  .venv/bin/python benchmarks/scale_10k.py [--runs 10000] [--logdir-runs 1000] [--compare 100] [--tabs 3]

Writes `--runs` small runs with benchmarks/run_index.py's generator (sweep trials, population members, client
runs), `--logdir-runs` of them as a TensorBoard logdir written by tensorboardX (the server reads it with
$JAXDASH_LOGDIR, as `--logdir`), builds the run index from scratch, starts `streamlit run` and prints, each with
its goal: the Runs page, Live of one run and compare of `--compare` runs, each from a fresh tab to drawn
(benchmarks/scale.py's measures); the server's peak resident memory; the index build from scratch; a run's
write reaching a query through the server's index keeper. Not run by the test suite.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import shlex
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import psutil  # noqa: E402
from playwright.sync_api import sync_playwright  # noqa: E402

from benchmarks import scale  # noqa: E402
from benchmarks.run_index import make_root  # noqa: E402
from benchmarks.scale import PeakRss, open_tabs  # noqa: E402
from dashboard.server.serve import CHROMIUM, CHROMIUM_ARGS, start_server  # noqa: E402
from runstore import index_reader, run_index, run_store  # noqa: E402
from runstore.run_folder import RunFolder  # noqa: E402

# A line chart of the uPlot engine (dashboard/panels/static/chart/engine.js) marks its element when drawn.
UPLOT_DRAWN = "Array.from(document.querySelectorAll('.jaxdash-line')).filter(el => el.__timing).length"
scale.CHARTS_WITH_DATA = f"() => ({scale.CHARTS_WITH_DATA})() + {UPLOT_DRAWN}"
GOALS = {"page": 2.0, "rss_mb": 1024.0, "build": 60.0, "fresh": 2.0}


def write_logdir(logdir: Path, n: int) -> float:
    """`n` TensorBoard runs of 20 scalars each, written by tensorboardX; the seconds it took."""
    from tensorboardX import SummaryWriter

    t = time.perf_counter()
    for i in range(n):
        with SummaryWriter(str(logdir / f"tb-{i:04d}")) as w:
            for s in range(20):
                w.add_scalar("train/loss", 1.0 / (s + 1 + i % 7), s)
    return time.perf_counter() - t


def build_from_scratch(root: Path) -> float:
    """Seconds for the index of `root` built from nothing."""
    for suffix in ("", "-wal", "-shm"):
        run_index.index_path(root).with_name(run_index.INDEX + suffix).unlink(missing_ok=True)
    t = time.perf_counter()
    run_index.update(root)
    return time.perf_counter() - t


def write_reaches_query(root: Path, timeout_s: float = 60.0) -> float:
    """Seconds from a run's write to a query over the index selecting it, kept by the server's keeper alone."""
    d = run_store.run_folders(root)[0]
    marker = time.time_ns() % 1_000_000
    t = time.perf_counter()
    RunFolder(d).append_records([{"step": 10_000, "wall": 1.0, "bench/marker": marker}])
    while time.perf_counter() - t < timeout_s:
        if index_reader.matching_ids(root, f"summary.bench/marker = {marker}"):
            return time.perf_counter() - t
        time.sleep(0.02)
    return float("inf")


def verdict(value: float, goal: float, unit: str) -> str:
    return f"{value:.2f} {unit} (goal {goal:g} {unit}: {'met' if value <= goal else 'NOT met'})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=10_000)
    ap.add_argument("--logdir-runs", type=int, default=1000)
    ap.add_argument("--compare", type=int, default=100)
    ap.add_argument("--tabs", type=int, default=3)
    args = ap.parse_args()
    print(f"command: {shlex.join([Path(sys.executable).name, *sys.argv])}")
    print(f"machine: {platform.node()}, {platform.platform()}, {os.cpu_count()} cores, "
          f"{psutil.virtual_memory().total / 2**30:.0f} GiB; load average {os.getloadavg()[0]:.1f}")  # fmt: skip
    print(f"date: {datetime.datetime.now().astimezone().isoformat(timespec='seconds')}", flush=True)
    tmp = Path(tempfile.mkdtemp(prefix="jaxdash-10k-"))
    root, logdir = tmp / "runs", tmp / "logdir"
    t = time.perf_counter()
    make_root(root, args.runs)
    print(f"wrote {args.runs} runs in {time.perf_counter() - t:.1f} s", flush=True)
    env = {"WANDB_MODE": "disabled", "JAXDASH_WARM_WORKER": "0"}
    if args.logdir_runs:
        print(
            f"wrote a logdir of {args.logdir_runs} tensorboardX runs in {write_logdir(logdir, args.logdir_runs):.1f} s"
        )
        env["JAXDASH_LOGDIR"] = str(logdir)
    build = build_from_scratch(root)
    print(f"Index built from scratch ({index_reader.indexed_count(root)} runs): {verdict(build, GOALS['build'], 's')}")
    server = start_server(root, tmp / "streamlit.log", env=env)
    rss = PeakRss(server.proc.pid)
    rss.start()
    proc, results = psutil.Process(server.proc.pid), {}
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            t = time.perf_counter()
            _, first = open_tabs(browser, f"{server.url}/runs", None, proc, 1)  # starts the keeper, mirrors the logdir
            print(f"Runs page, first open (mirrors the logdir, starts the index keeper): {first}", flush=True)
            deadline = time.perf_counter() + 300
            while index_reader.indexed_count(root) < args.runs + args.logdir_runs and time.perf_counter() < deadline:
                time.sleep(0.5)
            print(f"index holds {index_reader.indexed_count(root)} runs {time.perf_counter() - t:.0f} s after")
            ids = ",".join(index_reader.matching_ids(root, 'kind = "member"')[: args.compare])
            live = next(iter(index_reader.matching_ids(root, 'kind = "client"')))
            for label, path, charts in (
                (f"Runs page of {args.runs + args.logdir_runs} runs", "runs", None),
                ("Live of one run", f"live?run={live}", 1),
                (f"Compare {args.compare} runs", f"runs?compare={ids}", 1),
            ):
                results[label], got = open_tabs(browser, f"{server.url}/{path}", charts, proc, args.tabs)
                print(f"{label}: {got}", flush=True)
            fresh = write_reaches_query(root)
            browser.close()
    finally:
        rss.stop.set()
        rss.join()
        server.stop()
    print("Summary (median of fresh tabs):")
    for label, seconds in results.items():
        print(f"  {label}: {verdict(seconds, GOALS['page'], 's')}")
    print(f"  Server peak resident memory: {verdict(rss.peak / 2**20, GOALS['rss_mb'], 'MB')}")
    print(f"  Index built from scratch: {verdict(build, GOALS['build'], 's')}")
    print(f"  A run's write reaching a query (server's keeper): {verdict(fresh, GOALS['fresh'], 's')}")
    print(f"load average at the end {os.getloadavg()}")
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
