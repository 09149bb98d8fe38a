"""Start the dashboard as a `streamlit run` subprocess (for the browser test and the latency benchmark)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from dashboard.processes.launcher import REPO_ROOT
from dashboard.processes.tensorboard_server import free_port

APP = REPO_ROOT / "dashboard" / "server_app.py"  # the pages (app.py) and the streamed CSV route
CHROMIUM = "/usr/bin/chromium"  # Debian's Chromium (package chromium): benchmarks and screenshots, as a user's browser
# The test suite's browser: Debian's Chromium headless shell (package chromium-headless-shell: the same Chromium
# build without the browser's own UI, what Playwright itself uses for headless runs). The full browser keeps an
# omnibox popup WebUI renderer per window and its UI: ten page loads of the dashboard cost it 8.6 CPU s, the
# shell 4.5 s (benchmarks/browser_cost.py). $JAXDASH_TEST_CHROMIUM picks another (e.g. /usr/bin/chromium).
HEADLESS_SHELL = "/usr/bin/chromium-headless-shell"
TEST_CHROMIUM = os.environ.get("JAXDASH_TEST_CHROMIUM") or (
    HEADLESS_SHELL if Path(HEADLESS_SHELL).exists() else CHROMIUM
)
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
# Not --in-process-gpu: it runs the GPU code as a thread of the browser process, so a fault there ends the browser
# (a segfault at launch, before the GPU code's first log line); a GPU process of its own that faults is started
# again. Counted as each process's CPU before closing, it saved ~0.1 of ~2.6 CPU s over a launch and six pages.


@dataclass
class Server:
    """A running dashboard server."""

    proc: subprocess.Popen
    url: str
    log: Path

    def stop(self) -> None:
        """Terminate the server (and wait for it)."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()


def start_server(
    runs_root: Path, log: Path, env: Mapping[str, str] | None = None, wait_s: float = 60.0, app: Path = APP
) -> Server:
    """`streamlit run dashboard/server_app.py` (or `app`) headless on a free port of 127.0.0.1, with JAXDASH_RUNS=runs_root.

    Raises:
      RuntimeError: if the server exits or is not healthy within `wait_s`.
    """
    port = free_port()
    cmd = [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        str(app),
        "--server.headless",
        "true",
        "--server.port",
        str(port),
        "--server.address",
        "127.0.0.1",
        "--browser.gatherUsageStats",
        "false",
    ]
    full_env = {**os.environ, "JAXDASH_RUNS": str(runs_root), **(env or {})}
    with open(log, "wb") as f:
        proc = subprocess.Popen(
            cmd, cwd=REPO_ROOT, env=full_env, stdout=f, stderr=subprocess.STDOUT, start_new_session=True
        )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"streamlit exited with {proc.returncode}; see {log}")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=1) as r:
                if r.status == 200:
                    return Server(proc, url, log)
        except OSError:
            time.sleep(0.2)
    proc.terminate()
    raise RuntimeError(f"streamlit did not become healthy within {wait_s:.0f} s; see {log}")
