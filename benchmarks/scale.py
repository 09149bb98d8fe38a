"""Scale: big runs and many runs, measured in a real browser against a real server.

  .venv/bin/python benchmarks/scale.py [--records 1000000] [--big 10] [--small 1000] [--tabs 3]
      [--server-env NAME=VALUE]

Writes `--big` runs of `--records` metric records each (one file generated, then copied) and
`--small` short runs under a temporary runs root, starts `streamlit run`, and prints:
  * the Runs page's first opens (they start the server's run watcher), and how long its
    background builder (runstore/metrics/cache_builder.py) takes to cache every big run;
  * Live and Run detail of one big run, once cached: seconds from navigation to the first chart
    with points and to every chart (1 on Live, 3 on Run detail), in `--tabs` fresh tabs in turn;
  * compare of every big run (Runs & compare with ?compare=<ids>): until its first chart;
  * Runs page with all runs: until the table is drawn;
  * in-app switches (Live -> Runs & compare -> Run detail by the page links, no reload);
  * the reference: the same browser opening a bare Streamlit page (benchmarks/scale_reference_app.py)
    with one chart, or with the same runs table, in fresh tabs: what any Streamlit page costs here;
  * a summary: each page's median, its goal, and its ratio to the bare page;
  * the server process's peak resident memory (sampled every 0.2 s while the dashboard serves).
Each tab is closed after its measurement: an open tab's fragments keep the server busy.
Goals (#37): each page within 2 s of opening a fresh tab, the server under 1 GB.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402
import psutil  # noqa: E402
from playwright.sync_api import Browser, Page, sync_playwright  # noqa: E402

from benchmarks.scale_navigation import CHART_ELEMENTS, HAS_POINTS, IN_VIEW_JS, navigate  # noqa: E402
from dashboard.panels import panels, runs_index  # noqa: E402
from dashboard.reading import groups  # noqa: E402
from dashboard.server.serve import CHROMIUM, CHROMIUM_ARGS, start_server  # noqa: E402
from runstore import (
    run_folder,
    run_reads,  # noqa: E402
    run_store,  # noqa: E402
)
from runstore.metrics import metric_cache  # noqa: E402
from runstore.run_folder import RunFolder

REFERENCE_APP = Path(__file__).resolve().parent / "scale_reference_app.py"
CONFIG = {"lr": 0.005, "steps": 1000, "points": 128, "seed": 42}
# Charts holding points in one frame: plotly graphs, metric grids drawn by uPlot (dashboard/panels/static/line_grid.js,
# whose div lists what each panel drew as [name, points]) and line charts (scale_navigation.HAS_POINTS).
CHARTS_WITH_DATA = f"() => Array.from(document.querySelectorAll('{CHART_ELEMENTS}')).filter({HAS_POINTS}).length"
TABLE_DRAWN = "() => !!document.querySelector('[data-testid=stDataFrame] canvas')"
IN_VIEW_CHARTS = 0  # `timed`'s n_charts for "every chart in view, at least one"


def write_metrics(path: Path, n: int) -> None:
    """n records like an MNIST run's: loss, accuracy, steps/s every step; sys/* every 100; test every 1000.

    Lines are formatted directly (a float's repr is its JSON), ~5x faster than json.dumps per record.
    """
    rng = np.random.default_rng(0)
    i = np.arange(n)
    loss = (2.3 / (1 + i / 1e4) + rng.random(n) * 0.05).tolist()
    loss[n // 2] = 40.0  # a spike the overview must keep
    acc = np.minimum(0.99, i / n + 0.1).tolist()
    noise = rng.random(n).tolist()
    with open(path, "w") as f:
        for k in range(0, n, 100_000):
            lines = []
            for j in range(k, min(n, k + 100_000)):
                line = f'{{"step": {j + 1}, "wall": {round(j * 1e-3, 4)!r}, "ts": {1.7e9 + j * 1e-3!r}, '
                line += f'"train/loss": {loss[j]!r}, "train/acc": {acc[j]!r}, "perf/steps_per_sec": 1000.0'
                if j % 100 == 0:
                    line += f', "sys/cpu_percent": {100.0 + noise[j]!r}, "sys/rss_mb": {800.0 + j / 1e4!r}'
                if j % 1000 == 999:
                    line += f', "test/loss": {2.0 / (1 + j / 1e4)!r}, "test/acc": {min(0.99, j / n)!r}'
                lines.append(line + "}\n")
            f.writelines(lines)


def make_run(root: Path, name: str, metrics: Path | None, lr: float, group: str | None = None) -> Path:
    d = run_store.new_run_dir(root, "mnist", name)
    extra = {"group": group, "member": 0} if group else {}
    RunFolder(d).write_config("regression", {**CONFIG, "lr": lr}, name=name, task_spec="regression", panels=["loss"])
    final = {"train/loss": 0.1 + lr, "test/acc": 0.9 - lr}
    RunFolder(d).write_status(state="finished", pid=2**22 + 1, started=time.time() - 60, ended=time.time(), **extra)
    RunFolder(d).write_status(final=final, step=1000, total_steps=1000, wall_seconds=60.0)
    # Like a run started from the page with W&B offline (the default): its output and a sync command.
    wandb = {"mode": "offline", "url": None, "sync_command": f"wandb sync {d}/wandb/offline-run-x"}
    RunFolder(d).write_status(wandb=wandb)
    (d / run_folder.LOG).write_text("".join(f"step {s} loss {1 / s:.4f}\n" for s in range(1, 201)))
    if metrics is not None:
        shutil.copyfile(metrics, d / run_folder.RECORDS)
    else:
        RunFolder(d).append_records([{"step": s, "wall": s * 0.01, "train/loss": 1.0 / s} for s in range(1, 21)])
    return d


def charts_drawn(page: Page) -> int:
    """Charts with points, over the page and its component frames."""
    total = 0
    for frame in page.frames:
        try:
            total += frame.evaluate(CHARTS_WITH_DATA)
        except Exception:  # noqa: BLE001 - a frame navigating or gone: counted at the next poll
            continue
    return total


def timed(page: Page, url: str, n_charts: int | None = None, timeout_s: float = 120) -> tuple[float, float]:
    """Seconds from navigation to the first drawn chart and to `n_charts` of them (None: the runs
    table; IN_VIEW_CHARTS: every chart in the viewport)."""
    t0 = time.perf_counter()
    page.goto(url)
    deadline, first = t0 + timeout_s, None
    while time.perf_counter() < deadline:
        if n_charts == IN_VIEW_CHARTS:
            n, in_view = page.evaluate(IN_VIEW_JS)
            done = n >= 1 and n == in_view
        else:
            n = charts_drawn(page) if n_charts is not None else int(page.evaluate(TABLE_DRAWN))
            done = n >= (n_charts or 1)
        first = first if first is not None or n < 1 else time.perf_counter() - t0
        if done:
            return first, time.perf_counter() - t0
        time.sleep(0.05)
    page.screenshot(path="/tmp/scale_timeout.png", full_page=True)
    raise TimeoutError(f"{url}: not drawn within {timeout_s:.0f} s (screenshot: /tmp/scale_timeout.png)")


def costed(page: Page, url: str, n_charts: int | None, server: psutil.Process) -> dict[str, float]:
    """`timed`, with the CPU time each side spent until then: the page's renderer process (Chromium's
    ProcessTime; the Live page's chart frames share it) and the server process. Unlike wall time,
    these barely move with other programs' load."""
    page.goto(url.split("/", 3)[0] + "//" + url.split("/", 3)[2] + "/_stcore/health")  # the site's renderer
    cdp = page.context.new_cdp_session(page)
    cdp.send("Performance.enable")

    def cpu() -> float:
        return next(m["value"] for m in cdp.send("Performance.getMetrics")["metrics"] if m["name"] == "ProcessTime")

    page_cpu, server_cpu = cpu(), sum(server.cpu_times()[:2])
    first, every = timed(page, url, n_charts)
    return {
        "first": first,
        "all": every,
        "page_cpu": cpu() - page_cpu,
        "server_cpu": sum(server.cpu_times()[:2]) - server_cpu,
    }


def open_tabs(
    browser: Browser, url: str, n_charts: int | None, server: psutil.Process, tabs: int, shot: Path | None = None
) -> tuple[float, str]:
    """`costed` in `tabs` fresh tabs, one after the other, each closed after (an open tab's fragments
    keep the server busy), the last one screenshot to `shot`; returns the median seconds to every
    chart (or the table) and a line with each tab's figures."""
    out, times = [], []
    for _ in range(tabs):
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        got = costed(page, url, n_charts, server)
        times.append(got["all"])
        out.append(
            f"{got['first']:.2f}"
            + (f"/{got['all']:.2f}" if n_charts is not None and n_charts != 1 else "")
            + f" s (CPU page {got['page_cpu']:.2f}, server {got['server_cpu']:.2f})"
        )
        if shot is not None:
            page.screenshot(path=str(shot))
        page.close()
    median = float(np.median(times))
    return median, f"median {median:.2f} s; tabs: " + ", ".join(out) + f"; load average {os.getloadavg()[0]:.1f}"


class PeakRss(threading.Thread):
    """The peak resident memory of a process, sampled in the background."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.proc, self.peak, self.stop = psutil.Process(pid), 0, threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                self.peak = max(self.peak, self.proc.memory_info().rss)
            except psutil.Error:
                return
            time.sleep(0.2)


def cached(run_dir: Path) -> bool:
    """Whether metrics.cache/ covers all of metrics.jsonl (read from its index; builds nothing)."""
    doc = run_store.read_json(run_dir / metric_cache.CACHE_DIR / "index.json", {})
    parts = doc.get("parts") if isinstance(doc, dict) else None
    return bool(parts) and parts[-1]["end"] == (run_dir / run_folder.RECORDS).stat().st_size


def write_runs(tmp: Path, records: int, n_big: int, n_small: int) -> list[Path]:
    """`n_big` runs of `records` records (one file written, then copied) and `n_small` short runs."""
    root = tmp / "runs"
    root.mkdir()
    t = time.perf_counter()
    write_metrics(tmp / run_folder.RECORDS, records)
    size = (tmp / run_folder.RECORDS).stat().st_size
    big = [make_run(root, f"big-{i}", tmp / run_folder.RECORDS, 0.001 * (i + 1)) for i in range(n_big)]
    for i in range(n_small):
        make_run(root, f"small-{i}", None, 0.0001 * (i + 1))
    print(
        f"wrote {n_big} runs of {records:,} records ({size / 2**20:.0f} MB each) and {n_small} small runs"
        f" in {time.perf_counter() - t:.0f} s under {root}",
        flush=True,
    )
    return big


def measure(
    browser: Browser, url: str, big: list[Path], records: int, shots: Path, server: psutil.Process, tabs: int
) -> dict[str, float]:
    """Runs page (starts the server's run watcher), the background cache build, then each page in
    `tabs` fresh tabs; returns each page's median seconds."""
    _, first = open_tabs(browser, f"{url}/runs", None, server, 2)
    t = time.perf_counter()
    # the builder caches only files of MIN_GROWTH bytes or more (a page parses smaller ones itself): wait for those
    to_cache = [d for d in big if (d / run_folder.RECORDS).stat().st_size >= metric_cache.MIN_GROWTH]
    while not all(cached(d) for d in to_cache):
        time.sleep(0.5)
    print(f"Runs page, first opens: {first}", flush=True)
    print(f"Background cache build of {len(to_cache)} runs: done {time.perf_counter() - t:.0f} s later", flush=True)
    medians = {}
    ids = ",".join(d.name for d in big)
    n_runs = len(list(big[0].parent.iterdir()))
    for label, path, charts in (
        (f"Live of a {records:,}-record run", f"live?run={big[0].name}", 1),
        (
            f"Run detail of a {records:,}-record run (first chart/all in view)",
            f"detail?run={big[1].name}",
            IN_VIEW_CHARTS,
        ),
        (f"Compare {len(big)} runs", f"runs?compare={ids}", 1),
        (f"Runs page with {n_runs} runs", "runs", None),
    ):
        shot = shots / f"{path.split('?')[0]}{'_compare' if 'compare' in path else ''}.png"
        medians[label], got = open_tabs(browser, f"{url}/{path}", charts, server, tabs, shot)
        print(f"{label}: {got}", flush=True)
    print(f"In-app switches: {navigate(browser, url, big[0].name, ids, server, tabs)}", flush=True)
    return medians


def reference(browser: Browser, tmp: Path, tabs: int) -> dict[str, float]:
    """Median seconds of a fresh tab of a bare Streamlit page (benchmarks/scale_reference_app.py):
    the runs table alone, and one chart alone."""
    table = tmp / "runs_table.pkl"
    runs = run_reads.list_runs(tmp / "runs")
    runs_index.frame(runs, panels.key_config, groups.short_id).drop(columns=["run_id", "search", "_group"]).to_pickle(
        table
    )
    server = start_server(
        tmp / "runs", tmp / "reference.log", env={"JAXDASH_REFERENCE_TABLE": str(table)}, app=REFERENCE_APP
    )
    try:
        proc = psutil.Process(server.proc.pid)
        open_tabs(browser, f"{server.url}/?show=table", None, proc, 1)  # the first open imports pandas etc.
        out = {}
        for what, charts in (("table", None), ("chart", 1)):
            out[what], got = open_tabs(browser, f"{server.url}/?show={what}", charts, proc, tabs)
            print(f"Reference, a bare Streamlit page with one {what}: {got}", flush=True)
        return out
    finally:
        server.stop()


def summary(ours: dict[str, float], ref: dict[str, float]) -> None:
    """Each page's median against its goal and against the bare page it is built on."""
    goals = {"Live": 2.0, "Run detail": 2.0, "Compare": 2.0, "Runs page": 2.0}  # #37: each within 2 s
    print("Summary (median of fresh tabs; reference: a bare Streamlit page with one chart or one table):")
    for label, seconds in ours.items():
        goal = next(v for k, v in goals.items() if label.startswith(k))
        base = ref["table"] if label.startswith("Runs page") else ref["chart"]
        print(f"  {label}: {seconds:.2f} s (goal {goal:.0f} s); {seconds / base:.2f}x the bare page's {base:.2f} s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--big", type=int, default=10)
    ap.add_argument("--small", type=int, default=1000)
    ap.add_argument("--tabs", type=int, default=3, help="fresh tabs per page (the median is reported)")
    ap.add_argument("--keep", action="store_true", help="keep the runs root and screenshots (printed)")
    server_env_help = "extra environment of the server, e.g. STREAMLIT_RUNNER_POST_SCRIPT_GC=false (repeatable)"
    ap.add_argument("--server-env", action="append", default=[], metavar="NAME=VALUE", help=server_env_help)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="jaxdash-scale-"))
    big = write_runs(tmp, args.records, args.big, args.small)
    server = start_server(
        tmp / "runs",
        tmp / "streamlit.log",
        env={"WANDB_MODE": "disabled", "JAXDASH_WARM_WORKER": "0", **dict(e.split("=", 1) for e in args.server_env)},
    )
    rss = PeakRss(server.proc.pid)
    rss.start()
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            ours = measure(browser, server.url, big, args.records, tmp, psutil.Process(server.proc.pid), args.tabs)
            rss.stop.set()
            server.stop()
            summary(ours, reference(browser, tmp, args.tabs))
            browser.close()
    finally:
        rss.stop.set()
        rss.join()
        server.stop()
    print(f"Server peak resident memory: {rss.peak / 2**20:.0f} MB; load average {os.getloadavg()}")
    if not args.keep:
        shutil.rmtree(tmp, ignore_errors=True)
    else:
        print(f"kept {tmp} (screenshots *.png there)")


if __name__ == "__main__":
    main()
