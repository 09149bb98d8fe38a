"""What watching costs training: one Fashion-MNIST CLI run, its speed with and without pages open.

  .venv/bin/python -m benchmarks.page_cost [--window 20] [--rounds 3] [--epochs 3000]

One run trains from the CLI (as a user would) while the conditions take turns, round after round,
each between two windows with no page open (so a drift of the machine's speed falls on both sides):
  none    no page open;
  live    the run's Live page open in Chromium;
  three   Live + Run detail + Runs & compare, each in its own tab (all three visible);
  hidden  the Live page in a tab the user left (document.visibilityState "hidden": headless Chromium
          keeps every tab visible, so the page is told; a real browser also slows a hidden tab's timers).
Each window's speed is the steps per second between the run's own metrics.jsonl records (step, ts)
inside it, after a settle time for the pages to load. Printed: per condition, the median speed,
the slowdown against `none` (none's speed / its speed), the paired slowdown (the no-page windows
just before and after it / its speed: the ratio an epoch takes longer), and the
server's and Chromium's CPU seconds per minute, and what the pages' CPU is as a share of the machine (the
server's CPU above its no-page median plus Chromium's, over every core's minute: the slowdown a run that keeps
every core busy would see if the pages' work took its place one for one; it does not drift with the machine's
speed, as the steps per second do). Goals (issue #51): live <= 1.02x, three <= 1.05x, hidden <= 1.01x.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil
from playwright.sync_api import sync_playwright

from benchmarks import browser_probes
from dashboard.server.serve import CHROMIUM, CHROMIUM_ARGS, start_server
from runstore import run_folder

FASHION_DIR = Path("/usr/share/datasets/fashion-mnist")
CONDITIONS = ("none", "live", "three", "hidden")
GOALS = {"live": 1.02, "three": 1.05, "hidden": 1.01}
# Playwright turns off Chromium's throttling of background tabs; a user's browser has it.
THROTTLING_OFF = [
    "--disable-background-timer-throttling",
    "--disable-renderer-backgrounding",
    "--disable-backgrounding-occluded-windows",
]
SETTLE_S = 4.0
HIDE_JS = """() => {
  Object.defineProperty(document, "visibilityState", {get: () => "hidden", configurable: true});
  Object.defineProperty(document, "hidden", {get: () => true, configurable: true});
  document.dispatchEvent(new Event("visibilitychange"));
}"""  # pages load and draw their first figures; not measured


def steps_per_sec(metrics: Path, t0: float, t1: float) -> float:
    """Steps per second between the first and last record written in [t0, t1]."""
    inside = []
    for line in metrics.read_text().splitlines():
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            continue
        if t0 <= rec.get("ts", 0) <= t1:
            inside.append((rec["ts"], rec["step"]))
    if len(inside) < 2:
        return float("nan")
    (ta, sa), (tb, sb) = inside[0], inside[-1]
    return (sb - sa) / (tb - ta)


def wait_for_training(metrics: Path, proc: Any) -> None:
    """Until the run has written a few records (past loading and compiling), then 5 s more."""
    while not metrics.exists() or metrics.stat().st_size < 2000:
        if proc.poll() is not None:
            sys.exit(f"the training run ended first (exit code {proc.returncode})")
        time.sleep(0.5)
    time.sleep(5)


def cpu_seconds(procs: list[psutil.Process]) -> float:
    total = 0.0
    for p in procs:
        try:
            t = p.cpu_times()
            total += t.user + t.system + t.children_user + t.children_system
        except psutil.NoSuchProcess:
            pass
    return total


def chromium_processes() -> list[psutil.Process]:
    """Chromium's processes (browser, renderers, GPU/utility), started by this benchmark."""
    kids = psutil.Process(os.getpid()).children(recursive=True)
    return [p for p in kids if "chrom" in p.name().lower()]


def open_condition(context: Any, url: str, run_id: str, condition: str) -> list[Any]:
    """The pages of `condition` (none: no page), loaded."""
    urls = {
        "none": [],
        "live": [f"{url}/live?run={run_id}"],
        "three": [f"{url}/live?run={run_id}", f"{url}/detail?run={run_id}", f"{url}/runs"],
        "hidden": [f"{url}/live?run={run_id}"],
    }[condition]
    pages = []
    for u in urls:
        page = context.new_page()
        page.goto(u)
        pages.append(page)
    if condition == "hidden":  # headless Chromium keeps every tab visible: the page is told it is hidden
        pages[0].wait_for_timeout(SETTLE_S * 1000)  # drawn once while visible, as a tab the user left
        pages[0].evaluate(HIDE_JS)
    return pages


def visibility(pages: list[Any]) -> list[str]:
    return [p.evaluate("document.visibilityState") for p in pages]


def window(pages: list[Any], run_dir: Path, server: psutil.Process, seconds: float) -> tuple[float, float, float]:
    """(steps/s, server CPU s/min, Chromium CPU s/min) over `seconds` with `pages` open, after SETTLE_S."""
    time.sleep(SETTLE_S)
    chrome = chromium_processes()
    s0, c0, t0 = cpu_seconds([server]), cpu_seconds(chrome), time.time()
    time.sleep(seconds)
    s1, c1, t1 = cpu_seconds([server]), cpu_seconds(chrome), time.time()
    per_min = 60.0 / (t1 - t0)
    return steps_per_sec(run_dir / run_folder.RECORDS, t0, t1), (s1 - s0) * per_min, (c1 - c0) * per_min


def measure(run_dir: Path, server_pid: int, rounds: int, seconds: float, open_fn: Callable) -> dict[str, list]:
    """{condition: [(steps/s, server cpu s/min, chromium cpu s/min, visibility, reference steps/s)]}.

    Each round brackets every condition with windows of no page (none, live, none, three, none, hidden,
    none): a condition's reference is the mean speed of the no-page windows just before and after it,
    so a drift of this VM's speed over the minutes of a round falls on both sides of its ratio.
    """
    server = psutil.Process(server_pid)
    out: dict[str, list] = {c: [] for c in CONDITIONS}
    for r in range(rounds):
        before = window([], run_dir, server, seconds)
        for condition in CONDITIONS[1:]:
            pages = open_fn(condition)
            seen = visibility(pages)
            during = window(pages, run_dir, server, seconds)
            for p in pages:
                p.close()
            after = window([], run_dir, server, seconds)
            out["none"].append((*before, [], before[0]))
            out[condition].append((*during, seen, (before[0] + after[0]) / 2))
            print(f"round {r + 1} {condition:6s} {during[0]:8.1f} steps/s (no page around it: "
                  f"{before[0]:.1f}, {after[0]:.1f})  pages {seen}", flush=True)  # fmt: skip
            before = after
    return out


def report(results: dict[str, list]) -> None:
    """Medians per condition; `paired` is the median of the condition's reference speed (no page, the windows
    just before and after it) / its speed: the ratio an epoch takes longer with the pages open."""
    base = statistics.median(x[0] for x in results["none"] if math.isfinite(x[0]))
    server_base = statistics.median(x[1] for x in results["none"])
    cores = os.cpu_count() or 1
    print(
        f"\n{'condition':10s} {'steps/s':>8s} {'slowdown':>9s} {'paired':>8s} {'goal':>6s} "
        f"{'server cpu s/min':>17s} {'chromium':>9s} {'pages cpu':>10s}"
    )
    for condition, rows in results.items():
        rows = [x for x in rows if math.isfinite(x[0]) and math.isfinite(x[4])]  # windows after the run ended
        if not rows:
            print(f"{condition:10s} no window while the run trained (give it more --epochs)")
            continue
        speed = statistics.median(x[0] for x in rows)
        paired = statistics.median(x[4] / x[0] for x in rows)
        server = statistics.median(x[1] for x in rows)
        chrome = statistics.median(x[2] for x in rows)
        goal = f"{GOALS[condition]:.2f}" if condition in GOALS else "-"
        share = max(server - server_base, 0.0) + chrome  # CPU seconds a minute the pages took
        print(
            f"{condition:10s} {speed:8.1f} {base / speed:8.3f}x {paired:7.3f}x {goal:>6s} {server:17.1f} {chrome:9.1f}"
            f" {share / (60 * cores):9.1%}"
        )


def open_browser(p: Any) -> tuple[Any, Any]:
    """Headless Chromium with a user's background-tab throttling, and a 1400 x 950 context: (browser, context)."""
    browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, ignore_default_args=THROTTLING_OFF)
    return browser, browser.new_context(viewport={"width": 1400, "height": 950})


def start_training(prefix: str, epochs: int) -> tuple[Any, Any, Path]:
    """A dashboard server on a fresh runs root and a Fashion-MNIST CLI run in it: (server, process, run dir)."""
    if not (FASHION_DIR / "train-images-idx3-ubyte.gz").exists():
        sys.exit(f"Fashion-MNIST is missing in {FASHION_DIR}: apt-get install -y dataset-fashion-mnist")
    tmp = Path(tempfile.mkdtemp(prefix=prefix))
    runs = tmp / "runs"
    runs.mkdir()
    srv = start_server(runs, tmp / "streamlit.log", env={"WANDB_MODE": "disabled"})
    argv = ["mnist", "--dataset", "fashion_mnist", "--data-dir", str(FASHION_DIR), "--epochs", str(epochs)]
    proc, run_dir = browser_probes.cli_run(runs, argv, env={"WANDB_MODE": "disabled"})
    return srv, proc, run_dir


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--window", type=float, default=20.0, help="seconds measured per condition and round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--epochs", type=int, default=3000, help="more than the rounds need; the run is stopped after")
    args = parser.parse_args()
    srv, proc, run_dir = start_training("page-cost-", args.epochs)
    try:
        with sync_playwright() as p:
            browser, context = open_browser(p)
            wait_for_training(run_dir / run_folder.RECORDS, proc)
            results = measure(
                run_dir,
                srv.proc.pid,
                args.rounds,
                args.window,
                lambda c: open_condition(context, srv.url, run_dir.name, c),
            )
            browser.close()
    finally:
        proc.kill()
        srv.stop()
    print(f"\nload average {os.getloadavg()[0]:.1f}; {args.rounds} rounds of {args.window:.0f} s per condition")
    report(results)


if __name__ == "__main__":
    main()
