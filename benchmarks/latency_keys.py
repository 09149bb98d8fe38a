"""Live with many panels: a client run logging N scalar keys in four prefixes, its Live page in Chromium.

  .venv/bin/python benchmarks/dashboard_latency.py --keys 50 [--writes 20]

The run is a user's own loop (the `jaxdash` client, in this process); its Live page is open before the first
key is logged: in a window of 1400x950 (as the other measurements: a few panels in view, the others drawn when
scrolled near; the figures are those of the panels in view; after the first points the page is scrolled through
every panel and back to the top, as a user who looked at each), then in one tall enough for every panel to be in
view (every chart drawn and fed: the worst case). For each it prints:
  (first) each key's first point: run.log of step 0 with every key -> that key's panel holding the point;
  (b) log -> drawn: `writes` steps ~1.3 s apart (random phase against the page's polls), each logging every
      key: seconds per (key, step) until the key's chart holds the step;
  (d) blink while those writes are drawn: every chart sampled every 100 ms (browser_probes.SAMPLE_JS).
Times on both sides are wall clock (Date.now() in the page, time.time() here): same host.
Goals (issue #37, with 50 panels): first point <= 1 s, log -> drawn <= 0.5 s median, blink <= 1% of samples.
"""

from __future__ import annotations

import os
import random
import time
from pathlib import Path
from typing import Any

from playwright.sync_api import sync_playwright

from benchmarks import browser_probes
from benchmarks.dashboard_latency import stats
from dashboard.server.serve import CHROMIUM, CHROMIUM_ARGS, start_server

PREFIXES = ("train", "eval", "opt", "grad")
PANEL_PX = 330  # a panel's height with its share of section headers: the viewport holds every one
# In the page: every 20 ms, the wall-clock time at which each step first appears in each named series.
WATCH_JS = (
    """() => {
  window.__seenk = {};
  setInterval(() => {
    for (const t of """
    + browser_probes.SERIES_JS
    + """) {
      if (!t.n || !t.name) continue;
      const seen = (window.__seenk[t.name] = window.__seenk[t.name] || {});
      for (let i = Math.max(0, t.n - 200); i < t.n; i++) if (!(t.x[i] in seen)) seen[t.x[i]] = Date.now();
    }
  }, 20);
}"""
)
SHOWS = "(t) => (document.querySelector('[data-testid=stSelectbox] input') || {}).value?.includes(t)"  # its picker
# Once the page holds `n` charts and every one whose top is within the window (height `h`) is drawn: the names
# of their series (the keys in view), else null.
SHOWN_JS = (
    "([n, h]) => { const cs = ("
    + browser_probes.CHARTS_JS
    + """)(); if (cs.length < n) return null;
  const inView = cs.filter(([c]) => c.getBoundingClientRect().top < h);
  if (inView.some(([c, s]) => !s || !s.some((t) => t.n))) return null;
  return inView.flatMap(([c, s]) => s.filter((t) => t.n).map((t) => t.name)); }"""
)
SCROLL_THROUGH_JS = (
    "async () => { for (const [c] of ("
    + browser_probes.CHARTS_JS
    + ")()) { c.scrollIntoView(); await new Promise((ok) => setTimeout(ok, 100)); } }"
)
# Streamlit's page scrolls in its main section, not the window: back to its top.
TO_TOP_JS = """() => { for (const e of [document.querySelector('[data-testid=stMain]'), document.scrollingElement])
  if (e) e.scrollTo(0, 0); }"""
ALL_AT = "([keys, step]) => keys.every((k) => window.__seenk[k] && (step in window.__seenk[k]))"


def key_names(n: int) -> list[str]:
    """`n` keys spread over PREFIXES in turn (train/k0, eval/k1, ...): sections of about n / 4 panels."""
    return [f"{PREFIXES[i % len(PREFIXES)]}/k{i}" for i in range(n)]


def measure(tmp: Path, n_keys: int, writes: int) -> None:
    """(first), (b) and (d) of `n_keys` panels in a 1400x950 window, then with every panel in view."""
    for all_in_view in (False, True):
        measure_once(tmp, n_keys, writes, all_in_view)


def in_view(samples: list[list[Any]], height: int) -> list[list[Any]]:
    """SAMPLE_JS's samples less the charts outside the window (lazy: drawn once scrolled near)."""
    return [[t, [r for r in rows if -r[2] < r[3] < height]] for t, rows in samples]


def measure_once(tmp: Path, n_keys: int, writes: int, all_in_view: bool) -> None:
    """Start a server and a client run of `n_keys` keys, open its Live page, print (first), (b) and (d)."""
    import jaxdash  # the client: imported only for this mode

    runs = tmp / f"keys-{n_keys}-{all_in_view}"
    srv = start_server(runs, tmp / "keys.log", env={"WANDB_MODE": "disabled", "JAXDASH_WARM_WORKER": "0"})
    keys = key_names(n_keys)
    run = jaxdash.init(project="latency", name=f"keys-{n_keys}", runs_root=runs, wandb="disabled", tensorboard=False)
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            height = 600 + PANEL_PX * (n_keys + 1) // 2 if all_in_view else 950
            page = browser.new_page(viewport={"width": 1400, "height": height})
            page.goto(f"{srv.url}/live?run={run.id}")
            page.wait_for_function(SHOWS, arg=run.name, timeout=60_000, polling=100)  # the run's page is up
            page.evaluate(WATCH_JS)
            t0 = time.time()
            run.log({k: 1.0 + i for i, k in enumerate(keys)}, step=0, commit=True)
            shown = page.wait_for_function(SHOWN_JS, arg=[n_keys, height], timeout=60_000, polling=50).json_value()
            seen = page.evaluate("window.__seenk")
            first = [seen[k]["0"] / 1000 - t0 for k in shown]
            where = "every panel in view" if all_in_view else f"the {len(shown)} panels in a 1400x950 window"
            print(f"{n_keys} panels, {where}:")
            print(f"  (first) first points, run.log -> drawn: {stats(first)}   goal <= 1 s")
            if not all_in_view:  # as a user who looked at every panel: each drawn (and fed), then back to the top
                # every panel's chart element first: the scroll passes only the charts there when it starts
                charts = f"({browser_probes.CHARTS_JS})().length >= {n_keys}"
                page.wait_for_function(charts, timeout=60_000, polling=100)
                page.evaluate(SCROLL_THROUGH_JS)
                page.wait_for_function(ALL_AT, arg=[keys, 0], timeout=60_000, polling=100)
                page.evaluate(TO_TOP_JS)
            page.evaluate(browser_probes.SAMPLE_JS)
            written: dict[int, float] = {}
            for step in range(1, writes + 1):
                time.sleep(1.0 + random.random() * 0.6)
                written[step] = time.time()
                run.log({k: 1.0 / (step + 1) + i for i, k in enumerate(keys)}, step=step, commit=True)
            page.wait_for_function(ALL_AT, arg=[shown, writes], timeout=60_000, polling=50)
            report = browser_probes.blink_report(in_view(page.evaluate(browser_probes.STOP_JS), height))
            seen = page.evaluate("window.__seenk")
            delays = [seen[k][str(s)] / 1000 - written[s] for k in shown for s in written]
            one = [seen[shown[0]][str(s)] / 1000 - written[s] for s in written]
            print(f"  (b) run.log -> drawn, every (key, step): {stats(delays)}   goal <= 0.5 s median")
            print(f"      its first key alone: {stats(one)}")
            print(f"  (d) blink: {report}   goal <= 1%")
            print(f"      load average {os.getloadavg()[0]:.1f}")
            page.screenshot(path=str(tmp / f"keys-{n_keys}-{height}.png"))
            browser.close()
    finally:
        run.finish()
        srv.stop()
