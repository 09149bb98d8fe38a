"""What each page asks of the machine a run trains on: its requests a minute, and Chromium's and the server's CPU.

  .venv/bin/python -m benchmarks.page_probe [--window 40] [--static] [live detail runs]

One Fashion-MNIST CLI run trains (as in benchmarks/page_cost.py); each page named is opened alone in
headless Chromium, left SETTLE_S to load, then measured for --window seconds: the requests it made
by route (`poll`, `rows`, ...), the websocket frames it got (reruns), Chromium's and the server's CPU
seconds a minute, and the renderer's own task, script, layout and style time a minute (Chrome
DevTools Protocol's Performance.getMetrics). --static measures the same pages of the run once it is
killed: what a page costs with nothing to follow. Where page_cost tells what pages cost training,
this tells which page costs what, and why.
"""

from __future__ import annotations

import argparse
import collections
import time
from typing import Any

import psutil
from playwright.sync_api import sync_playwright

from benchmarks.page_cost import chromium_processes, cpu_seconds, open_browser, start_training, wait_for_training
from runstore import run_folder

SETTLE_S = 6.0
RENDERER = ("TaskDuration", "ScriptDuration", "LayoutDuration", "RecalcStyleDuration", "LayoutCount")


def probe(context: Any, url: str, server: psutil.Process, seconds: float) -> str:
    """One page alone: its line of the report."""
    page = context.new_page()
    routes: collections.Counter = collections.Counter()
    frames: collections.Counter = collections.Counter()
    page.on("request", lambda r: routes.update([r.url.split("?")[0].rsplit("/", 1)[-1]]))
    page.on("websocket", lambda ws: ws.on("framereceived", lambda f: frames.update(["in"])))
    page.goto(url)
    page.wait_for_timeout(SETTLE_S * 1000)  # Playwright's events are delivered while it waits, not in time.sleep
    routes.clear()
    frames.clear()
    cdp = context.new_cdp_session(page)
    cdp.send("Performance.enable")
    m0 = {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}
    chrome = chromium_processes()
    c0, s0, t0 = cpu_seconds(chrome), cpu_seconds([server]), time.time()
    page.wait_for_timeout(seconds * 1000)
    c1, s1, t1 = cpu_seconds(chrome), cpu_seconds([server]), time.time()
    m1 = {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}
    page.close()
    per_min = 60 / (t1 - t0)
    asked = ", ".join(f"{k} {v * per_min:.0f}" for k, v in routes.most_common())
    renderer = " ".join(f"{k.replace('Duration', '')} {(m1[k] - m0[k]) * per_min:.2f}" for k in RENDERER)
    return (
        f"chromium {(c1 - c0) * per_min:.2f} s/min, server {(s1 - s0) * per_min:.2f} s/min; "
        f"requests/min: {asked or 'none'}; websocket frames in/min {frames['in'] * per_min:.0f}\n"
        f"{'':10s} renderer per min: {renderer}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("pages", nargs="*", help="live, detail and/or runs (default: all three)")
    parser.add_argument("--window", type=float, default=40.0, help="seconds measured per page")
    parser.add_argument("--static", action="store_true", help="measure the pages of the run once it was killed")
    args = parser.parse_args()
    pages = args.pages or ["live", "detail", "runs"]
    if unknown := set(pages) - {"live", "detail", "runs"}:
        parser.error(f"pages: live, detail or runs, not {', '.join(sorted(unknown))}")
    srv, proc, run_dir = start_training("page-probe-", 3000)
    urls = {
        "live": f"{srv.url}/live?run={run_dir.name}",
        "detail": f"{srv.url}/detail?run={run_dir.name}",
        "runs": f"{srv.url}/runs",
    }
    try:
        with sync_playwright() as p:
            browser, context = open_browser(p)
            wait_for_training(run_dir / run_folder.RECORDS, proc)
            if args.static:
                proc.kill()
                proc.wait()
            for name in pages:
                print(f"{name:10s}", probe(context, urls[name], psutil.Process(srv.proc.pid), args.window), flush=True)
            browser.close()
    finally:
        proc.kill()
        srv.stop()


if __name__ == "__main__":
    main()
