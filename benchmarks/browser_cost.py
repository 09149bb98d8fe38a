"""What the test suite's browser costs: Debian's full Chromium against its headless shell, the same pages.

  .venv/bin/python -m benchmarks.browser_cost [--rounds 2] [--pages 8]

One dashboard server over a runs root with one finished regression run. Each browser in turn, round
after round (so a drift of the machine's speed falls on both): launch it (the suite's flags), open
`--pages` pages one after the other in one context (Live, Runs & compare, Run detail, New run, ...),
each until its script run ends plus 1.5 s, then close it. Printed: the CPU seconds of the browser and
every process it started (reaped children: renderers, zygote, GPU, utility; taken from
RUSAGE_CHILDREN once Playwright's driver has exited), the wall time, and the headless shell's CPU as a
fraction of full Chromium's. Both are Debian's Chromium (packages `chromium`, `chromium-headless-shell`,
the same version): the shell has no browser UI, so no omnibox popup WebUI renderers and no window.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from playwright.sync_api import sync_playwright  # noqa: E402

from dashboard.server.serve import CHROMIUM, CHROMIUM_ARGS, HEADLESS_SHELL, start_server  # noqa: E402

PATHS = ("live", "runs", "detail", "", "live", "runs", "detail", "live", "runs", "detail")
SETTLED_JS = (
    "() => !document.querySelector('[data-testid=stStatusWidget]')"
    " && document.querySelectorAll('.stMarkdown, .js-plotly-plot').length > 0"
)


def children_cpu() -> float:
    """CPU seconds of every reaped descendant of this process."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def one_session(executable: str, url: str, pages: int) -> tuple[float, float]:
    """(CPU s, wall s) of launching `executable`, opening `pages` pages in turn and closing it."""
    cpu0, t0 = children_cpu(), time.monotonic()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        context = browser.new_context(viewport={"width": 1400, "height": 950})
        for i in range(pages):
            page = context.new_page()
            page.goto(f"{url}/{PATHS[i % len(PATHS)]}")
            page.wait_for_function(SETTLED_JS, timeout=60_000, polling=100)
            page.wait_for_timeout(1500)
            page.close()
        browser.close()
    return children_cpu() - cpu0, time.monotonic() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--pages", type=int, default=8)
    args = parser.parse_args()
    browsers = {"chromium": CHROMIUM, "headless shell": HEADLESS_SHELL}
    missing = [exe for exe in browsers.values() if not Path(exe).exists()]
    if missing:
        sys.exit(f"browser_cost: {', '.join(missing)} missing: apt-get install -y chromium chromium-headless-shell")
    tmp = Path(tempfile.mkdtemp())
    runs = tmp / "runs"
    runs.mkdir()
    train = [sys.executable, "-m", "training", "regression", "--steps", "300", "--runs-root", str(runs)]
    subprocess.run([*train, "--wandb", "disabled", "--quiet"], check=True, capture_output=True)
    # The server is started before any browser: its CPU is not among the reaped children measured.
    srv = start_server(runs, tmp / "streamlit.log", env={"WANDB_MODE": "disabled", "JAXDASH_WARM_WORKER": "0"})
    cpu: dict[str, list[float]] = {name: [] for name in browsers}
    try:
        for rnd in range(args.rounds):
            for name, exe in browsers.items():
                used, wall = one_session(exe, srv.url, args.pages)
                cpu[name].append(used)
                print(f"round {rnd + 1} {name:>14}: {used:5.2f} CPU s, {wall:5.1f} s wall ({args.pages} pages)")
    finally:
        srv.stop()
    full, shell = statistics.median(cpu["chromium"]), statistics.median(cpu["headless shell"])
    print(f"median CPU: chromium {full:.2f} s, headless shell {shell:.2f} s: the shell costs {shell / full:.2f}x")


if __name__ == "__main__":
    main()
