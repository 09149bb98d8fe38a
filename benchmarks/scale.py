"""Scale: big runs and many runs, measured in a real browser against a real server.

  .venv/bin/python benchmarks/scale.py [--records 1000000] [--big 10] [--small 1000]

Writes `--big` runs of `--records` metric records each (one file generated, then copied) and
`--small` short runs under a temporary runs root, starts `streamlit run`, and prints:
  * Live and Run detail of one big run: seconds from navigation until every chart holds its
    points, first open (builds metrics.cache/) and second open (a new tab);
  * compare of every big run (Runs & compare with ?compare=<ids>): until the grid is drawn;
  * Runs page with all runs: until the table holds its rows;
  * the server process's peak resident memory (sampled every 0.2 s throughout).
Goals: <= 2 s, <= 3 s, <= 1 s, < 1 GB.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402
import psutil  # noqa: E402
from playwright.sync_api import Page, sync_playwright  # noqa: E402

from dashboard.serve import CHROMIUM, CHROMIUM_ARGS, start_server  # noqa: E402
from training import run_store  # noqa: E402

CONFIG = {"lr": 0.005, "steps": 1000, "points": 128, "seed": 42}
# Plotly charts holding points in one frame (Live's in-place charts are components: frames of their own).
CHARTS_WITH_DATA = """() => Array.from(document.querySelectorAll('.js-plotly-plot'))
  .filter(p => (p._fullData || []).some(t => (t._length || (t.x && t.x.length) || 0) > 0)).length"""
TABLE_DRAWN = "() => !!document.querySelector('[data-testid=stDataFrame] canvas')"


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
    run_store.write_config(d, "regression", {**CONFIG, "lr": lr}, name=name, task_spec="regression", panels=["loss"])
    final = {"train/loss": 0.1 + lr, "test/acc": 0.9 - lr}
    run_store.write_status(d, state="finished", pid=2**22 + 1, started=time.time() - 60, ended=time.time(), **extra)
    run_store.write_status(d, final=final, step=1000, total_steps=1000, wall_seconds=60.0)
    if metrics is not None:
        shutil.copyfile(metrics, d / "metrics.jsonl")
    else:
        run_store.append_metrics(d, [{"step": s, "wall": s * 0.01, "train/loss": 1.0 / s} for s in range(1, 21)])
    return d


def charts_drawn(page: Page, n: int) -> bool:
    """At least `n` charts with points, over the page and its component frames."""
    total = 0
    for frame in page.frames:
        try:
            total += frame.evaluate(CHARTS_WITH_DATA)
        except Exception:  # noqa: BLE001 - a frame navigating or gone: counted at the next poll
            continue
    return total >= n


def timed(page: Page, url: str, n_charts: int | None = None, timeout_s: float = 120) -> float:
    """Seconds from navigation to `n_charts` drawn charts (None: the runs table drawn)."""
    t0 = time.perf_counter()
    page.goto(url)
    deadline = t0 + timeout_s
    while time.perf_counter() < deadline:
        done = page.evaluate(TABLE_DRAWN) if n_charts is None else charts_drawn(page, n_charts)
        if done:
            return time.perf_counter() - t0
        time.sleep(0.05)
    page.screenshot(path="/tmp/scale_timeout.png", full_page=True)
    raise TimeoutError(f"{url}: not drawn within {timeout_s:.0f} s (screenshot: /tmp/scale_timeout.png)")


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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--big", type=int, default=10)
    ap.add_argument("--small", type=int, default=1000)
    ap.add_argument("--keep", action="store_true", help="keep the runs root (printed)")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="jaxdash-scale-"))
    root = tmp / "runs"
    root.mkdir()
    t = time.perf_counter()
    write_metrics(tmp / "metrics.jsonl", args.records)
    size = (tmp / "metrics.jsonl").stat().st_size
    big = [make_run(root, f"big-{i}", tmp / "metrics.jsonl", 0.001 * (i + 1)) for i in range(args.big)]
    for i in range(args.small):
        make_run(root, f"small-{i}", None, 0.0001 * (i + 1))
    print(
        f"wrote {args.big} runs of {args.records:,} records ({size / 2**20:.0f} MB each) and {args.small} small runs"
        f" in {time.perf_counter() - t:.0f} s under {root}"
    )
    server = start_server(root, tmp / "streamlit.log", env={"WANDB_MODE": "disabled"})
    rss = PeakRss(server.proc.pid)
    rss.start()
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(server.url)
            page.wait_for_selector("text=New run", timeout=60_000)
            one = big[0].name
            for label, path, charts in (("Live", "live", 1), ("Run detail", "detail", 3)):
                if label == "Run detail":
                    one = big[1].name  # its own first open, with no cache yet
                first = timed(page, f"{server.url}/{path}?run={one}", charts)
                page = browser.new_page(viewport={"width": 1400, "height": 1000})
                second = timed(page, f"{server.url}/{path}?run={one}", charts)
                print(
                    f"{label} of a {args.records:,}-record run: first open {first:.2f} s, again (new tab) {second:.2f} s"
                )
            ids = ",".join(d.name for d in big)
            cold = timed(page, f"{server.url}/runs?compare={ids}", 1, timeout_s=600)
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            warm = timed(page, f"{server.url}/runs?compare={ids}", 1)
            print(f"Compare {args.big} runs: first {cold:.2f} s (builds the caches it lacks), again {warm:.2f} s")
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            listing = timed(page, f"{server.url}/runs")
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            again = timed(page, f"{server.url}/runs")
            print(f"Runs page with {args.big + args.small} runs: {listing:.2f} s, again {again:.2f} s")
            page.screenshot(path=str(tmp / "runs.png"))
            browser.close()
    finally:
        rss.stop.set()
        rss.join()
        server.stop()
    print(f"Server peak resident memory: {rss.peak / 2**20:.0f} MB")
    if not args.keep:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
