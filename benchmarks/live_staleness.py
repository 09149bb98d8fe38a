"""How far behind the run Live's charts are: staleness of the curves and the fitted line, sampled every 0.5 s.

  .venv/bin/python -m benchmarks.live_staleness [--seconds 30] [--keys 50]

Two scenarios on one dashboard server, each with its run's Live page open in Chromium (1400 x 950):
  regression  a CLI regression run (`python -m training regression`, a slow lr: the line slides for ~30 s);
  client      a user's script (the `jaxdash` client, its own process) logging `--keys` scalar keys per step,
              20 steps a second for `--seconds`.
A thread here reads the run's metrics.jsonl every 20 ms and notes when each record's step first appears in the
file (its write time). Every 0.5 s, while the run writes, the page reports what each chart in view has drawn: a
curve chart its largest step, the fit chart its line's (w, b). Staleness = now minus the write time of the newest
record the chart has drawn (for the line: the record whose regression/weight and regression/bias it shows).
Printed: median and p95 per scenario, for the curves and the fitted line. Goals (issue #51): median <= 1.0 s,
p95 <= 2.0 s. Sampling starts once every chart in view holds a point and stops at the run's last write.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from playwright.sync_api import sync_playwright

from benchmarks import browser_probes
from dashboard.server.serve import CHROMIUM, CHROMIUM_ARGS, start_server
from runstore.run_folder import RunFolder

GOALS = {"median": 1.0, "p95": 2.0}
SAMPLE_S = 0.5
W_TAG, B_TAG = "regression/weight", "regression/bias"
# What every chart in view has drawn: [kind, value] with kind "fit" ([w, b] of its "model" line) or "curve"
# (its largest step drawn); a chart without a point gives ["none", null].
DRAWN_JS = (
    "() => ("
    + browser_probes.CHARTS_JS
    + """)().filter(([c]) => {
  const r = c.getBoundingClientRect();
  return r.height > 0 && r.bottom > 0 && r.top < window.innerHeight;
}).map(([c, s]) => {
  const data = s || [];
  const line = data.find((t) => t.name === "model" && t.n >= 2);
  if (line) {
    const [x0, x1] = [line.x[0], line.x[line.n - 1]], [y0, y1] = [line.y[0], line.y[line.n - 1]];
    const w = (y1 - y0) / (x1 - x0);
    return ["fit", [w, y0 - w * x0]];
  }
  if (data.some((t) => t.name === "data")) return ["none", null];  // a fit chart before its first line
  let step = null;
  for (const t of data) if (t.n && t.name) step = Math.max(step ?? -Infinity, Number(t.x[t.n - 1]));
  return step === null ? ["none", null] : ["curve", step];
})"""
)
CLIENT_SCRIPT = """
import sys, time
import jaxdash
runs, n, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
keys = [f"{('train', 'eval', 'opt', 'grad')[i % 4]}/k{i}" for i in range(n)]
run = jaxdash.init(project="staleness", name="client", runs_root=runs, wandb="disabled", tensorboard=False)
print(run.id, flush=True)
t0, step = time.time(), 0
while time.time() - t0 < seconds:
    run.log({k: 1.0 / (step + 1) + i for i, k in enumerate(keys)}, step=step)
    step += 1
    time.sleep(0.05)
run.finish()
"""


class Tail:
    """Notes the wall time at which each record of a metrics.jsonl first appears in the file (a thread)."""

    def __init__(self, path: Path) -> None:
        self.path, self.seen, self.fits = path, {}, []  # seen: step -> time; fits: (w, b, time)
        self.last_write = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        offset, tail = 0, b""
        while not self._stop.is_set():
            try:
                with open(self.path, "rb") as f:
                    f.seek(offset)
                    chunk = f.read()
            except OSError:
                chunk = b""
            now = time.time()
            offset += len(chunk)
            *lines, tail = (tail + chunk).split(b"\n")
            for line in lines:
                try:
                    rec = json.loads(line)
                except ValueError:
                    continue
                if isinstance(rec.get("step"), int):
                    self.seen.setdefault(rec["step"], now)
                    self.last_write = now
                if isinstance(rec.get(W_TAG), float) and isinstance(rec.get(B_TAG), float):
                    self.fits.append((rec[W_TAG], rec[B_TAG], now))
            self._stop.wait(0.02)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def fit_time(self, w: float, b: float) -> float | None:
        """The write time of the record whose (weight, bias) is nearest (w, b)."""
        if not self.fits:
            return None
        return min(self.fits, key=lambda f: abs(f[0] - w) + abs(f[1] - b))[2]

    def step_time(self, step: float) -> float | None:
        return self.seen.get(int(step))


def sample(page: Any, tail: Tail, proc: subprocess.Popen) -> dict[str, list[float]]:
    """Staleness samples {"curves": [...], "fit": [...]} every SAMPLE_S from the first full draw until the run ends."""
    out: dict[str, list[float]] = {"curves": [], "fit": []}
    started = False
    while proc.poll() is None:
        t = time.time()
        drawn = page.evaluate(DRAWN_JS)
        now = time.time()
        if not started:  # every chart in view holds a point (the fit chart: its line)
            started = bool(drawn) and all(kind != "none" for kind, _ in drawn)
        if started and now - tail.last_write < 1.0:  # the run still writes: after its last record, nothing is due
            for kind, value in drawn:
                at = tail.fit_time(*value) if kind == "fit" else tail.step_time(value) if kind == "curve" else None
                if at is not None:
                    out["curves" if kind == "curve" else "fit"].append(max(0.0, now - at))
        time.sleep(max(0.0, SAMPLE_S - (time.time() - t)))
    return out


def open_live(page: Any, url: str, run_dir: Path, proc: subprocess.Popen) -> None:
    """The run's Live page, once its folder exists, with its charts on the page."""
    deadline = time.monotonic() + 60
    while not RunFolder(run_dir).status_path.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    page.goto(f"{url}/live?run={run_dir.name}")
    page.wait_for_function(f"({browser_probes.CHARTS_JS})().length > 0", timeout=60_000, polling=100)


def regression(page: Any, url: str, runs: Path, seconds: float) -> dict[str, list[float]]:
    """A CLI regression run that trains ~`seconds` s (~1,000 steps a second here), watched on Live."""
    steps = int(seconds * 1000)
    argv = ["regression", "--lr", str(round(6.0 / steps, 7)), "--steps", str(steps)]
    proc, run_dir = browser_probes.cli_run(runs, argv, env={"WANDB_MODE": "disabled"})
    return watched(page, url, run_dir, proc)


def client(page: Any, url: str, runs: Path, seconds: float, keys: int) -> dict[str, list[float]]:
    """A client script logging `keys` keys 20 steps a second for `seconds` s, watched on Live."""
    cmd = [sys.executable, "-c", CLIENT_SCRIPT, str(runs), str(keys), str(seconds)]
    env = {**os.environ, "WANDB_MODE": "disabled"}
    proc = subprocess.Popen(cmd, cwd=browser_probes.REPO, env=env, stdout=subprocess.PIPE, text=True)
    run_dir = runs / proc.stdout.readline().strip()
    return watched(page, url, run_dir, proc)


def watched(page: Any, url: str, run_dir: Path, proc: subprocess.Popen) -> dict[str, list[float]]:
    """The staleness samples of `proc`'s run on Live, its records' write times tailed meanwhile; `proc` is
    killed after."""
    tail = Tail(RunFolder(run_dir).records_path)
    try:
        open_live(page, url, run_dir, proc)
        return sample(page, tail, proc)
    finally:
        proc.kill()
        tail.stop()


def summary(xs: list[float]) -> str:
    """median and p95 of staleness samples in seconds, against the goals."""
    if not xs:
        return "no sample"
    xs = sorted(xs)
    med, p95 = statistics.median(xs), xs[min(len(xs) - 1, int(0.95 * len(xs)))]
    ok = "ok" if med <= GOALS["median"] and p95 <= GOALS["p95"] else "MISSED"
    return f"median {med:5.2f} s  p95 {p95:5.2f} s  max {xs[-1]:5.2f} s  (n={len(xs)})  {ok}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=30.0, help="how long each run writes")
    parser.add_argument("--keys", type=int, default=50, help="keys the client run logs per step")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="live-staleness-"))
    runs = tmp / "runs"
    runs.mkdir()
    srv = start_server(runs, tmp / "streamlit.log", env={"WANDB_MODE": "disabled"})
    results = {}
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1400, "height": 950})
            results["regression"] = regression(page, srv.url, runs, args.seconds)
            results[f"client ({args.keys} keys)"] = client(page, srv.url, runs, args.seconds, args.keys)
            browser.close()
    finally:
        srv.stop()
    print(f"$ {' '.join([Path(sys.executable).name, '-m', 'benchmarks.live_staleness', *sys.argv[1:]])}")
    print(f"{platform.node()} · {os.cpu_count()} cores · {time.strftime('%Y-%m-%d %H:%M')} · "
          f"load average {os.getloadavg()[0]:.1f}")  # fmt: skip
    print(f"staleness (now - write time of the newest record drawn), every {SAMPLE_S} s; goals: median <= "
          f"{GOALS['median']} s, p95 <= {GOALS['p95']} s")  # fmt: skip
    for name, got in results.items():
        print(f"{name:20s} curves      {summary(got['curves'])}")
        if got["fit"] or name == "regression":
            print(f"{'':20s} fitted line {summary(got['fit'])}")


if __name__ == "__main__":
    main()
