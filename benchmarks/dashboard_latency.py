"""Dashboard latency and steadiness, measured in a real browser.

  .venv/bin/python benchmarks/dashboard_latency.py [--starts 3] [--writes 20] [--blink-epochs 10]

(a) start-to-first-point on a warm server: press Start on the New run page (regression, defaults)
    until the loss chart of the Live page holds its first point. Broken down with the run
    directory's own timestamps: page launch (launch.json), training process up (status.json
    started), first metrics record written (metrics.jsonl ts), drawn (browser); "via" says whether
    the dashboard's warm worker took the run or a fresh process started (launch.json).
(b) write-to-draw: append a record with a known step to metrics.jsonl of a fake running run
    and time until the Live page's loss chart holds that step.
(c) first point on a fresh server (regression), and for Fashion-MNIST (warm server), with the
    phases the progress line showed before it ("loading data…", "compiling…").
(d) blink: a multi-epoch Fashion-MNIST run started from the CLI, its Live page open; every 100 ms
    every chart's effective opacity, size and drawn state (benchmarks/browser_probes.py).
--keys N: instead, a client run logging N scalar keys in four prefixes, its Live page's N panels all in view:
    each key's first point, log -> drawn and blink (benchmarks/latency_keys.py; goals <= 1 s, <= 0.5 s, <= 1%).

Times on both sides are wall clock (Date.now() in the page, time.time() here): same host.
Goals: (a) <= 1 s median, (b) <= 1 s, (c) <= 3 s, (d) <= 1% of samples faded, missing or jumped.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from playwright.sync_api import Page, sync_playwright  # noqa: E402
from playwright.sync_api import TimeoutError as PlaywrightTimeout  # noqa: E402

from benchmarks import browser_probes  # noqa: E402
from dashboard.server.serve import CHROMIUM, CHROMIUM_ARGS, start_server  # noqa: E402
from runstore import (
    run_folder,
    run_store,  # noqa: E402
)
from runstore.run_folder import RunFolder
from settings.config import config_to_dict, parse_config  # noqa: E402

# In the page: every 20 ms, note the wall-clock time at which each step first appears in the "train" loss trace.
WATCH_JS = (
    """() => {
  window.__seen = {}; window.__firstDrawn = null;
  setInterval(() => {
    for (const t of """
    + browser_probes.SERIES_JS
    + """) {
      if (t.name !== 'train/loss' || !t.n) continue;
      if (window.__firstDrawn === null) window.__firstDrawn = Date.now();
      const xs = t.x; const n = t.n;
      for (let i = Math.max(0, n - 5); i < n; i++) { const s = xs[i]; if (!(s in window.__seen)) window.__seen[s] = Date.now(); }
    }
    if (window.__firstDrawn === null && ++window.__ticks % 5 === 0) {  // every 100 ms: the phase the progress line says
      const bar = document.querySelector('[data-testid="stProgress"]');
      const m = bar && bar.textContent.match(/(starting|loading data|compiling)…/);
      if (m) window.__phases.add(m[1]);
    }
  }, 20);
  window.__phases = new Set(); window.__ticks = 0;
}"""
)


def stats(xs: list[float]) -> str:
    """median / p90 / max of seconds."""
    xs = sorted(xs)
    p90 = xs[min(len(xs) - 1, int(round(0.9 * (len(xs) - 1))))]
    return f"median {statistics.median(xs):.2f} s · p90 {p90:.2f} s · max {xs[-1]:.2f} s (n={len(xs)})"


def start_to_first_point(
    page: Page, url: str, runs: Path, wandb: str, gap: float = 0.0, task: str | None = None
) -> dict[str, float | str]:
    """One Start press on the New run page (`gap` s after it loaded); returns the phases in seconds after the click.

    `task`: the title of the task to pick first (default: the page's default task, regression).
    """
    page.goto(f"{url}/new")
    if task:
        page.get_by_text(task, exact=True).first.click()
    start = page.get_by_role("button", name="Start run")
    start.wait_for(timeout=60_000)
    time.sleep(gap)
    page.get_by_role("combobox", name="W&B mode").click()
    page.get_by_role("option", name=wandb, exact=True).click()
    before = set(run_store.run_folders(runs)) if runs.exists() else set()
    page.evaluate(WATCH_JS)
    t_click = page.evaluate("Date.now()") / 1000
    start.click()
    page.wait_for_function("window.__firstDrawn !== null", timeout=120_000, polling=50)
    drawn = page.evaluate("window.__firstDrawn") / 1000
    (run_dir,) = set(run_store.run_folders(runs)) - before  # run folders only (not queue.db, .queue/)
    info = run_store.read_json(run_dir / run_folder.LAUNCH) or {}
    started = RunFolder(run_dir).status().get("started", float("nan"))
    first_ts = RunFolder(run_dir).records()[0][0]["ts"]
    wait_finished(run_dir)
    return {
        "launch": info.get("launched", float("nan")) - t_click,
        "process up": started - t_click,
        "first record": first_ts - t_click,
        "drawn": drawn - t_click,
        "via": info.get("via", "?"),  # "worker": the warm worker took the run; "cold": a fresh process
        "shown": "/".join(page.evaluate("Array.from(window.__phases)")) or "-",
        "compile": RunFolder(run_dir).status().get("compile_seconds") or float("nan"),
        "load": os.getloadavg()[0],
    }


def wait_finished(run_dir: Path, timeout: float = 120) -> None:
    """Let a run end before the next measurement (2 shared cores)."""
    deadline = time.monotonic() + timeout
    while RunFolder(run_dir).status().get("state") in (None, "running") and time.monotonic() < deadline:
        time.sleep(0.2)


def fake_running_run(runs: Path) -> Path:
    """A regression run that stays "running" (its pid is this process) and that we append to by hand."""
    d = run_store.new_run_dir(runs, "regression", "latency-probe")
    RunFolder(d).write_config("regression", config_to_dict(parse_config("regression", {})), name="latency-probe")
    RunFolder(d).write_status(state="running", pid=os.getpid(), started=time.time(), step=0, total_steps=10**9)
    RunFolder(d).append_records([{"step": 0, "wall": 0.0, "ts": time.time(), "train/loss": 1.0}])
    return d


def write_to_draw(page: Page, url: str, runs: Path, writes: int) -> list[float]:
    """Append `writes` records ~1.3 s apart (random phase vs. the page's refresh); delay of each until drawn."""
    run_dir = fake_running_run(runs)
    page.goto(f"{url}/live?run={run_dir.name}")
    page.evaluate(WATCH_JS)
    page.wait_for_function("0 in window.__seen", timeout=60_000, polling=50)
    written: dict[int, float] = {}
    for i in range(1, writes + 1):
        time.sleep(1.0 + random.random() * 0.6)
        written[i] = time.time()
        RunFolder(run_dir).append_records(
            [{"step": i, "wall": float(i), "ts": written[i], "train/loss": 1.0 / (i + 1)}]
        )
    page.wait_for_function(f"{writes} in window.__seen", timeout=30_000, polling=50)
    seen = page.evaluate("window.__seen")
    RunFolder(run_dir).write_status(state="stopped", ended=time.time())
    return [seen[str(i)] / 1000 - written[i] for i in range(1, writes + 1)]


def first_point_fresh(tmp: Path, wandb: str, task: str | None = None) -> dict[str, float | str]:
    """Start -> first point on a server started just now (its warm worker still importing)."""
    runs = tmp / f"fresh-{time.time_ns()}"
    srv = start_server(runs, tmp / "fresh.log", env={"WANDB_MODE": "offline"})
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1400, "height": 950})
            result = start_to_first_point(page, srv.url, runs, wandb, task=task)
            browser.close()
    finally:
        srv.stop()
    return result


def blink(tmp: Path, epochs: int) -> browser_probes.BlinkReport:
    """(d): a Fashion-MNIST run started from the CLI, its Live page sampled until it ends."""
    runs = tmp / "blink"
    runs.mkdir()
    srv = start_server(runs, tmp / "blink.log", env={"WANDB_MODE": "offline"})
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1400, "height": 950})
            argv = ["mnist", "--dataset", "fashion_mnist", "--epochs", str(epochs)]
            proc, run_dir = browser_probes.cli_run(runs, argv)
            while not (run_dir / run_folder.STATUS).exists() and proc.poll() is None:
                time.sleep(0.1)
            report = browser_probes.watch_blinks(page, srv.url, run_dir, proc)
            page.screenshot(path=str(tmp / "blink.png"), full_page=True)
            browser.close()
    finally:
        srv.stop()
    return report


def show(label: str, phases: list[dict[str, float | str]], goal: float) -> None:
    """One line per start, then the median of "drawn" (and of the warm worker's starts alone)."""
    print(label)
    if not phases:
        print("    no start drew a point")
        return
    for i, ph in enumerate(phases, 1):
        print(f"    #{i}: " + " · ".join(f"{k} {v:.2f}" if isinstance(v, float) else f"{k} {v}" for k, v in ph.items()))
    print(f"    drawn: {stats([float(ph['drawn']) for ph in phases])}   goal <= {goal:g} s", flush=True)
    warm = [float(ph["drawn"]) for ph in phases if ph["via"] == "worker"]
    if warm and len(warm) < len(phases):
        print(f"    drawn, warm worker only: {stats(warm)}")


def main() -> None:
    """Start the app and Chromium, run the measurements, print them."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--starts", type=int, default=3, help="Start presses for (a) and (c)")
    ap.add_argument("--writes", type=int, default=20, help="appended records for (b)")
    ap.add_argument("--gap", type=float, default=5.0, help="seconds on the New run page before each Start")
    ap.add_argument("--wandb", default="disabled", choices=("auto", "offline", "disabled"), help="W&B mode of runs")
    ap.add_argument("--blink-epochs", type=int, default=10, help="epochs of the (d) run; 0 skips (d)")
    ap.add_argument("--keys", type=int, default=0, help="N: only the N-panel measurements (benchmarks/latency_keys.py)")
    args = ap.parse_args()
    sys.stdout.reconfigure(line_buffering=True)  # each result as soon as it is measured
    tmp = Path(tempfile.mkdtemp(prefix="jaxdash-bench-"))
    if args.keys:
        from benchmarks import latency_keys  # imports this module's `stats`

        latency_keys.measure(tmp, args.keys, args.writes)
        return
    if args.blink_epochs:  # first: the measurement most sensitive to what else the machine does
        report = blink(tmp, args.blink_epochs)
        print(f"(d) blink, {args.blink_epochs}-epoch Fashion-MNIST CLI run: {report}   goal <= 1%")
        print(f"    load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; screenshot {tmp / 'blink.png'}")
    runs = tmp / "runs"
    srv = start_server(runs, tmp / "streamlit.log", env={"WANDB_MODE": "offline"})
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1400, "height": 950})
            warm = measured(lambda: start_to_first_point(page, srv.url, runs, args.wandb, args.gap), args.starts)
            show(f"(a) Start -> first point drawn, regression, warm server (W&B {args.wandb}):", warm, 1.0)
            fashion = "MNIST / Fashion-MNIST"
            show(
                "(c) Start -> first point drawn, Fashion-MNIST, warm server:",
                measured(lambda: start_to_first_point(page, srv.url, runs, args.wandb, args.gap, fashion), args.starts),
                3.0,
            )
            print(
                f"(b) metrics.jsonl write -> drawn: {stats(write_to_draw(page, srv.url, runs, args.writes))}   goal <= 1 s"
            )
            browser.close()
    finally:
        srv.stop()
    show(
        "(c) Start -> first point drawn, regression, fresh server:",
        measured(lambda: first_point_fresh(tmp, args.wandb), args.starts),
        3.0,
    )


def measured(start: Callable[[], dict[str, float | str]], n: int) -> list[dict[str, float | str]]:
    """`n` results of `start`; a start whose first point never showed is reported and left out."""
    out = []
    for _ in range(n):
        try:
            out.append(start())
        except PlaywrightTimeout as exc:
            print(f"    a start whose first point never showed: {str(exc).splitlines()[0]}")
    return out


if __name__ == "__main__":
    main()
