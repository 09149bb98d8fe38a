"""Runs we did not start (client runs, TensorBoard logdirs) in a real server and Chromium: ids are data, never code.

A run id holding `__` (Keras' train/validation sub-runs, `add_scalars`, `jaxdash.init(name="adam__lr1e-3")`)
once broke Live and Run detail: Streamlit's v2 components refuse a key with `__`, and the run id was in the key.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from tensorboardX import SummaryWriter

from benchmarks import browser_probes
from dashboard.processes.tensorboard_server import start_tensorboard
from dashboard.server.serve import Server, start_server
from runstore import tb_logdir
from runstore.run_folder import RunFolder
from tests import client_scripts
from tests.apptest_pages import fake_run

pytest.importorskip("playwright.sync_api")
# Points drawn per chart on the page (uPlot's or plotly's).
DRAWN_JS = f"({browser_probes.CHARTS_JS})().map(([c, s]) => (s ? s.reduce((a, t) => a + t.n, 0) : 0))"
BROKEN = ("BidiComponentInvalidIdError", "delimiter sequence", "Traceback", "Something went wrong")


@pytest.mark.browser
def test_a_run_id_with_double_underscore_opens_live_and_run_detail(server: tuple[Server, Path], tab: Any) -> None:
    srv, runs = server
    run = fake_run(runs, "regression", "finished", name="adam__lr1e-3")
    assert "__" in run.name
    for path in ("live", "detail"):
        tab.goto(f"{srv.url}/{path}?run={run.name}")
        tab.wait_for_function(f"{DRAWN_JS}.some(n => n > 0)", timeout=60_000, polling=100)
        body = tab.inner_text("body")
        assert not any(b in body for b in BROKEN), (path, body[:2000])


TAGS = ["loss", "other", "first_only"]


def _write(folder: Path, steps: range, base: float, tags: tuple[str, ...] = ("other",)) -> None:
    """One writer's life in `folder`: a new event file with `loss` at `steps` (and `tags` at the last)."""
    writer = SummaryWriter(str(folder))
    for step in steps:
        writer.add_scalar("loss", base + step, step)
    for tag in tags:
        writer.add_scalar(tag, base, steps[-1])
    writer.close()


def _tensorboard_scalars(url: str, run: str, tags: list[str]) -> dict[str, list[tuple[int, float]]]:
    """{tag: [(step, value)]} as TensorBoard's own server answers its scalars plugin's HTTP API."""
    out: dict[str, list[tuple[int, float]]] = {}
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and set(out) != set(tags):
        time.sleep(0.5)
        with urllib.request.urlopen(f"{url}data/plugin/scalars/tags") as r:
            known = json.load(r).get(run, {})
        for tag in set(tags) & set(known):
            with urllib.request.urlopen(f"{url}data/plugin/scalars/scalars?run={run}&tag={tag}") as r:
                out[tag] = [(step, value) for _, step, value in json.load(r)]
    return out


def _mirrored(runs: Path, run: str, tags: list[str]) -> dict[str, list[tuple[int, float]]]:
    records, _ = RunFolder(tb_logdir.mirror_root(runs) / tb_logdir.mirror_id(run)).records()
    return {tag: [(r["step"], r[tag]) for r in records if tag in r] for tag in tags}


def test_a_writer_restarted_in_the_same_folder_shows_as_tensorboard_shows_it(tmp_path: Path) -> None:
    logs, live_runs, fresh_runs = tmp_path / "logs", tmp_path / "live", tmp_path / "fresh"
    _write(logs / "r1", range(1, 21), 0.0, ("other", "first_only"))
    tb_logdir.sync(logs, live_runs)  # the page saw the first writer's 20 points
    assert len(_mirrored(live_runs, "r1", ["loss"])["loss"]) == 20
    time.sleep(1.0)  # event file names hold the time in seconds: the next writer's sorts after this one's
    _write(logs / "r1", range(1, 13), 100.0)  # restarted: steps from 1 again, in a new file
    tb_logdir.sync(logs, live_runs)  # read while it restarted
    tb_logdir.sync(logs, fresh_runs)  # a server started afterwards reads both files at once
    tb = start_tensorboard(logs)
    try:
        expected = _tensorboard_scalars(tb.url, "r1", TAGS)
    finally:
        tb.close()
    assert [s for s, _ in expected["loss"]] == list(range(1, 13)), expected  # TensorBoard's own answer
    assert expected["other"] == [(12, 100.0)] and expected["first_only"] == [(20, 0.0)]  # per tag, as TensorBoard
    assert _mirrored(live_runs, "r1", TAGS) == expected
    assert _mirrored(fresh_runs, "r1", TAGS) == expected


WRITER = """
import sys, time
from tensorboardX import SummaryWriter
w = SummaryWriter(sys.argv[1], flush_secs=1)
for step in range(3):
    w.add_scalar("loss", 1.0 / (step + 1), step)
w.flush()
print("written", flush=True)
sys.stdin.readline()  # alive, its event file open, until told to exit
"""


def test_a_mirrored_run_reads_finished_within_seconds_of_its_writers_exit(tmp_path: Path) -> None:
    logs, runs = tmp_path / "logs", tmp_path / "runs"
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(logs / "w1")], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert writer.stdout is not None and writer.stdout.readline().strip() == "written"
        mirror = tb_logdir.mirror_root(runs) / "w1"
        tb_logdir.sync(logs, runs, now=time.time() + tb_logdir.IDLE_S + 1)  # idle, but its writer holds the file
        assert tb_logdir.status(mirror)["state"] == "running"
    finally:
        writer.communicate("\n", timeout=30)  # the writer closes its file and exits
    exited = time.monotonic()
    while tb_logdir.status(mirror).get("state") == "running" and time.monotonic() - exited < 10:
        time.sleep(0.5)
        tb_logdir.sync(logs, runs)
    assert tb_logdir.status(mirror)["state"] == "finished"
    assert time.monotonic() - exited <= tb_logdir.IDLE_S + 2


CLIENT = """
import jaxdash
run = jaxdash.init(project="own-loop", name="plain")
for step in range(5):
    run.log({"step_loss": 1.0 / (step + 1), "train/acc": 0.5}, step=step)
run.finish()
"""
IDLE_JS = "() => !document.querySelector('[data-testid=stStatusWidget]')"
OUR_TASKS_ONLY = ("compile time", "starting…", "Process output", "No confusion matrix yet", "mode: unknown")


@pytest.mark.browser
def test_runs_we_do_not_own_offer_no_stop_and_no_texts_of_our_tasks(tmp_path: Path, tab: Any) -> None:
    """A server of its own: it reads a TensorBoard logdir ($JAXDASH_LOGDIR)."""
    runs, logs = tmp_path / "runs", tmp_path / "logs"
    done = subprocess.run([sys.executable, "-c", CLIENT], env=client_scripts.script_env(runs), timeout=120)
    assert done.returncode == 0
    client_run = client_scripts.only_run(runs).name
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(logs / "w1")], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    env = {"WANDB_MODE": "disabled", "JAXDASH_WARM_WORKER": "0", "JAXDASH_LOGDIR": str(logs)}
    srv = start_server(runs, tmp_path / "streamlit.log", env=env)
    try:
        assert writer.stdout is not None and writer.stdout.readline().strip() == "written"
        page = tab
        page.goto(f"{srv.url}/live?run=w1")  # its writer is alive: the run is running
        page.get_by_text("No Stop: a TensorBoard log's writer is not ours to stop", exact=False).wait_for(
            timeout=60_000
        )
        page.wait_for_function(IDLE_JS, timeout=60_000, polling=100)  # the script run ended: no element left over
        assert page.get_by_role("button", name="Stop").count() == 0
        for path in ("live", "detail"):
            page.goto(f"{srv.url}/{path}?run={client_run}")
            page.get_by_text("step_loss").first.wait_for(timeout=60_000)
            page.wait_for_function(IDLE_JS, timeout=60_000, polling=100)
            body = page.inner_text("body")
            assert not [t for t in OUR_TASKS_ONLY if t in body], (path, body[:3000])
        page.goto(f"{srv.url}/detail?run=w1")
        page.get_by_text("Weights & Biases").first.wait_for(timeout=60_000)
        page.wait_for_function(IDLE_JS, timeout=60_000, polling=100)
        body = page.inner_text("body")
        assert not [t for t in OUR_TASKS_ONLY if t in body], ("detail w1", body[:3000])
    finally:
        srv.stop()
        writer.communicate("\n", timeout=30)
