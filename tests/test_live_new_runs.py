"""New runs show on an idle page, and a finished run reads finished, with nothing clicked.

A real server reading a TensorBoard logdir (JAXDASH_LOGDIR) and headless Chromium on the Runs page, then
on Live, left alone: a tensorboardX SummaryWriter started under the logdir shows within NEW_RUN_S of its
first flush, a `jaxdash` client run (a real subprocess) within NEW_RUN_S of its `init`, and each reads
"finished" within FINISHED_S of its last write (the writer's close: the logdir's idle rule,
tb_logdir.IDLE_S without growth and no process holding its event file; the client's `finish`).
Live with no run picked follows the newest run: a new writer's, client script's or engine run's (the CLI)
run is the one it shows, picker and panel, and the URL pins no earlier run; a run the user picked stays
picked while newer runs start (tests/test_live_picker.py sends the picker's race to the server directly).
Deadlines count from the write, not from when the test starts waiting. Marked `browser`.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tensorboardX import SummaryWriter

from dashboard.server.serve import Server, start_server
from runstore import run_folder, run_store, tb_logdir
from runstore.run_folder import RunFolder
from tests import client_scripts

pytest.importorskip("playwright.sync_api")
pytestmark = pytest.mark.browser
NEW_RUN_S = 2.0  # a new run shows on an idle Runs or Live page within this of its first write
FINISHED_S = 5.0  # a finished run reads finished within this of its last write
assert tb_logdir.IDLE_S < FINISHED_S  # the idle rule leaves the page time to show it

# The texts of the Runs table's row (a canvas grid: its cells are in the page, hidden, for screen readers)
# holding a cell that reads `name`; null while there is none.
ROW_JS = """(name) => {
  for (const row of document.querySelectorAll('[role=row]')) {
    const cells = Array.from(row.querySelectorAll('[role=gridcell]'), (c) => c.textContent.trim());
    if (cells.includes(name)) return cells;
  }
  return null;
}"""
# The Live page's run picker (it follows the newest active run while none was picked).
PICKED_JS = "() => (document.querySelector('[data-testid=stSelectbox] input') || {}).value || ''"
# Whether Live's panel (badge, progress, the run's charts) holds a text.
PANEL_JS = "(text) => (document.querySelector('.st-key-live_panel') || {}).innerText?.includes(text) || false"
CLIENT = """
import sys, time
import jaxdash
run = jaxdash.init(project="new-runs", name=sys.argv[1], tensorboard=False, wandb="disabled")
print("started", time.time(), flush=True)
run.log({"loss": 0.5})
sys.stdin.readline()  # the test says when to finish
run.log({"loss": 0.25})
run.finish()
print("finished", time.time(), flush=True)
"""
# A script as a user's: `init`, a second of loading data, then its first record (a key of its own: a section
# "<name> · 1" on Live), and it trains until the test ends it. Live's page run that switches to it waits
# for that first record (live.first_records): the longest page run, which the browser's next reruns queue behind.
LOADING_CLIENT = """
import sys, time
import jaxdash
run = jaxdash.init(project="new-runs", name=sys.argv[1], tensorboard=False, wandb="disabled")
print("started", time.time(), flush=True)
time.sleep(1.0)  # loading data
run.log({sys.argv[1] + "/loss": 0.5})
print("logged", time.time(), flush=True)
sys.stdin.readline()
"""


@pytest.fixture(scope="module")
def logdir_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, Path, Path]]:
    """The dashboard on a runs root holding one finished run, reading an empty TensorBoard logdir: (server, runs
    root, logdir)."""
    tmp = tmp_path_factory.mktemp("new-runs-server")
    runs, logs = tmp / "runs", tmp / "logs"
    runs.mkdir()
    logs.mkdir()
    env = {"WANDB_MODE": "disabled", "JAXDASH_WARM_WORKER": "0", "JAXDASH_LOGDIR": str(logs)}
    earlier = run_store.new_run_dir(runs, "regression", "earlier")  # Runs opens on a table, as a user's does
    RunFolder(earlier).write_config("regression", {}, name="earlier")
    RunFolder(earlier).write_status(state="finished", ended=time.time())
    srv = start_server(runs, tmp / "streamlit.log", env=env)
    yield srv, runs, logs
    srv.stop()


def _left_ms(since: float, bound_s: float) -> float:
    """Milliseconds left of `bound_s` counted from the wall-clock time `since` (at least 1)."""
    return max(1.0, (since + bound_s - time.time()) * 1000)


def _wait_row(page: Any, name: str, since: float, bound_s: float, state: str | None = None) -> None:
    """Until the Runs table has a row for `name` (reading `state`, if given), failing `bound_s` after `since`."""
    test = f"(name) => {{ const r = ({ROW_JS})(name); return !!r && {'r.includes(' + repr(state) + ')' if state else 'true'}; }}"
    try:
        page.wait_for_function(test, arg=name, timeout=_left_ms(since, bound_s), polling=50)
    except Exception as exc:  # Playwright's TimeoutError: say what the page showed instead
        row = page.evaluate(ROW_JS, name)
        raise AssertionError(f"{name} not shown {state or ''} within {bound_s} s of its write; its row: {row}") from exc


def _wait_picked(page: Any, name: str, since: float, bound_s: float) -> None:
    """Until Live's run picker shows `name`, failing `bound_s` after `since`."""
    try:
        page.wait_for_function(
            f"(name) => ({PICKED_JS})().includes(name)", arg=name, timeout=_left_ms(since, bound_s), polling=50
        )
    except Exception as exc:
        shown, url = page.evaluate(PICKED_JS), page.url
        try:  # the message says whether it showed later, and when, or never (a pinned run: see the URL)
            page.wait_for_function(f"(name) => ({PICKED_JS})().includes(name)", arg=name, timeout=15000, polling=50)
            late = time.time() - since
        except Exception:
            late = None
        raise AssertionError(
            f"Live shows {shown!r}, not {name}, {bound_s} s after its write (url {url}; shown after {late} s)"
        ) from exc


def _idle(page: Any) -> None:
    """Until the page is drawn and its script has stopped running (nothing clicked after this)."""
    page.locator("[data-testid=stStatusWidget]").wait_for(state="detached", timeout=60_000)
    page.wait_for_timeout(1500)  # past any rerun its first draw asked for: the page is idle, as a user's left open


def _new_writer(logs: Path, name: str) -> tuple[SummaryWriter, float]:
    """A tensorboardX writer under the logdir with three scalars on disk: (writer, wall time of its write)."""
    writer = SummaryWriter(str(logs / name), flush_secs=120)  # only the test's flushes reach the file
    for step in range(3):
        writer.add_scalar("loss", 1.0 / (step + 1), step)
    writer.flush()
    return writer, time.time()


def _closed(writer: SummaryWriter) -> float:
    """Close `writer` (its last write); the event file's modification time, which the idle rule counts from."""
    writer.add_scalar("loss", 0.1, 3)
    writer.close()
    return max(p.stat().st_mtime for p in Path(writer.logdir).glob(tb_logdir.EVENT_PREFIX + "*"))


def _start_client(tmp: Path, runs: Path, name: str, code: str = CLIENT) -> tuple[subprocess.Popen, float]:
    """A `jaxdash` script as a subprocess, once its run exists: (process, wall time its `init` returned)."""
    script = client_scripts.write(tmp, code, f"{name}.py")
    proc = subprocess.Popen(
        [sys.executable, str(script), name],
        cwd=tmp,
        env=client_scripts.script_env(runs, WANDB_MODE="disabled"),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    line = proc.stdout.readline().split()  # type: ignore[union-attr]
    if line[:1] != ["started"]:
        proc.kill()
        pytest.fail(f"the client script did not start its run: {line} {proc.stderr.read()[-2000:]}")  # type: ignore[union-attr]
    return proc, float(line[1])


def _finish_client(proc: subprocess.Popen) -> float:
    """Let the script log once more and finish; the wall time its `finish` returned."""
    proc.stdin.write("\n")  # type: ignore[union-attr]
    proc.stdin.flush()  # type: ignore[union-attr]
    line = proc.stdout.readline().split()  # type: ignore[union-attr]
    assert line[:1] == ["finished"], f"{line} {proc.stderr.read()[-2000:]}"  # type: ignore[union-attr]
    proc.wait(30)
    return float(line[1])


def _open_idle(page: Any, url: str, drawn: str) -> None:
    """`url` drawn (`drawn`: a selector) and left idle."""
    page.goto(url)
    page.locator(drawn).first.wait_for(state="attached", timeout=60_000)
    _idle(page)


def test_a_new_logdir_writer_shows_on_an_idle_runs_page(logdir_server: tuple[Server, Path, Path], tab: Any) -> None:
    srv, _, logs = logdir_server
    _open_idle(tab, f"{srv.url}/runs", "[data-testid=stMain]")
    writer, written = _new_writer(logs, "tbx_new")
    try:
        _wait_row(tab, "tbx_new", written, NEW_RUN_S)
    finally:
        writer.close()


def test_a_new_client_run_shows_on_an_idle_runs_page_and_reads_finished_after_finish(
    logdir_server: tuple[Server, Path, Path], tab: Any, tmp_path: Path
) -> None:
    srv, runs, _ = logdir_server
    _open_idle(tab, f"{srv.url}/runs", "[data-testid=stMain]")
    proc, started = _start_client(tmp_path, runs, "client_new")
    try:
        _wait_row(tab, "client_new", started, NEW_RUN_S, state="running")
        finished = _finish_client(proc)
        _wait_row(tab, "client_new", finished, FINISHED_S, state="finished")
    finally:
        proc.kill()


def test_a_closed_writers_run_reads_finished_on_an_idle_runs_page(
    logdir_server: tuple[Server, Path, Path], tab: Any
) -> None:
    """The page is opened while the writer runs (its row reads running); nothing is clicked after its close."""
    srv, _, logs = logdir_server
    writer, _ = _new_writer(logs, "tbx_closed")
    try:
        _open_idle(tab, f"{srv.url}/runs", "[role=gridcell]")
        _wait_row(tab, "tbx_closed", time.time(), 30.0, state="running")  # listed as the page opened
    finally:
        last = _closed(writer)
    _wait_row(tab, "tbx_closed", last, FINISHED_S, state="finished")


def test_a_new_logdir_writer_shows_on_an_idle_live_page(logdir_server: tuple[Server, Path, Path], tab: Any) -> None:
    """Live follows the newest active run while none was picked: a new writer's run becomes the one shown."""
    srv, _, logs = logdir_server
    _open_idle(tab, f"{srv.url}/live", "[data-testid=stMain]")
    writer, written = _new_writer(logs, "tbx_live")
    try:
        _wait_picked(tab, "tbx_live", written, NEW_RUN_S)
    finally:
        writer.close()


def _wait_panel(page: Any, text: str, since: float, bound_s: float) -> None:
    """Until Live's panel shows `text`, failing `bound_s` after `since`."""
    try:
        page.wait_for_function(PANEL_JS, arg=text, timeout=_left_ms(since, bound_s), polling=50)
    except Exception as exc:
        raise AssertionError(f"Live's panel has no {text!r} {bound_s} s after the run's write") from exc


def _wait_listed(page: Any, name: str, since: float, bound_s: float) -> None:
    """Until Live's picker lists `name` (its list opened and closed again, as a user looks), failing `bound_s`
    after `since`."""
    picker = page.locator("[data-testid=stSelectbox]")
    while True:
        picker.click()
        options = page.get_by_role("option").all_inner_texts()
        page.keyboard.press("Escape")
        if any(name in o for o in options):
            return
        assert time.time() < since + bound_s, f"{name} not among Live's runs {bound_s} s after its write: {options}"
        page.wait_for_timeout(100)  # between looks: the page reruns when its runs changed


def test_new_client_runs_show_on_an_idle_live_page(
    logdir_server: tuple[Server, Path, Path], tab: Any, tmp_path: Path
) -> None:
    """Nothing picked: Live follows the newest run. Opened on a running script's run, it shows each script
    started after it (picker and panel) within NEW_RUN_S, and stays there: the URL pins no earlier run."""
    srv, runs, _ = logdir_server
    procs = [_start_client(tmp_path, runs, "client_shown", LOADING_CLIENT)[0]]
    try:
        _open_idle(tab, f"{srv.url}/live", "[data-testid=stSelectbox]")
        _wait_picked(tab, "client_shown", time.time(), 30.0)
        for name in ("client_next", "client_last"):  # each new run replaces the picker: twice
            proc, started = _start_client(tmp_path, runs, name, LOADING_CLIENT)
            procs.append(proc)
            _wait_picked(tab, name, started, NEW_RUN_S)
            line = proc.stdout.readline().split()  # type: ignore[union-attr]
            assert line[:1] == ["logged"], line
            _wait_panel(tab, f"{name} · 1", float(line[1]), NEW_RUN_S)  # its first record's section: its panel
            _idle(tab)  # past the reruns its start and first record brought
            assert name in tab.evaluate(PICKED_JS) and "run=" not in tab.url, (tab.evaluate(PICKED_JS), tab.url)
    finally:
        for proc in procs:
            proc.kill()


def _start_builtin(runs: Path, name: str) -> tuple[subprocess.Popen, float]:
    """`python -m training regression` (the engine's CLI), once its run folder has its config: (process, the
    config's write time, which the run list reads first)."""
    before = set(runs.iterdir())
    proc = subprocess.Popen(
        [sys.executable, "-m", "training", "regression", "--steps", "400", "--name", name, "--wandb", "disabled"]
        + ["--no-tensorboard", "--quiet"],
        cwd=client_scripts.ROOT,
        env=client_scripts.script_env(runs, WANDB_MODE="disabled", JAX_PLATFORMS="cpu"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        for d in set(runs.iterdir()) - before:
            if RunFolder(d).has_config():
                return proc, (d / run_folder.CONFIG).stat().st_mtime
        time.sleep(0.02)  # polling for the folder the process writes
    proc.kill()
    pytest.fail(f"the engine wrote no run folder: {proc.stderr.read()[-2000:]}")  # type: ignore[union-attr]


def test_a_new_builtin_run_shows_on_an_idle_live_page(logdir_server: tuple[Server, Path, Path], tab: Any) -> None:
    srv, runs, _ = logdir_server
    _open_idle(tab, f"{srv.url}/live", "[data-testid=stSelectbox]")
    proc, written = _start_builtin(runs, "builtin_live")
    try:
        _wait_picked(tab, "builtin_live", written, NEW_RUN_S)
        assert "run=" not in tab.url or "builtin_live" in tab.url, tab.url
    finally:
        proc.kill()
        proc.wait(30)


def test_a_run_picked_on_live_stays_picked_when_a_new_run_starts(
    logdir_server: tuple[Server, Path, Path], tab: Any, tmp_path: Path
) -> None:
    """A run the user picks in Live's picker stays shown (and in the URL) while newer runs start; the new run is
    listed in the picker."""
    srv, runs, _ = logdir_server
    later = run_store.new_run_dir(runs, "regression", "later")  # newer than the run picked: not the default
    RunFolder(later).write_config("regression", {}, name="later")
    RunFolder(later).write_status(state="finished", ended=time.time())
    _open_idle(tab, f"{srv.url}/live", "[data-testid=stSelectbox]")
    picker = tab.locator("[data-testid=stSelectbox]")
    picker.click()
    tab.get_by_role("option", name="earlier", exact=False).first.click()
    earlier = next(d.name for d in runs.iterdir() if "-earlier-" in d.name)  # the fixture's finished run
    tab.wait_for_function(f"() => location.search.includes({earlier!r})", timeout=30_000, polling=50)
    _wait_picked(tab, "earlier", time.time(), 30.0)
    _idle(tab)
    proc, _ = _start_client(tmp_path, runs, "client_not_picked")
    try:
        _wait_listed(tab, "client_not_picked", time.time(), 30.0)  # the page reran with the new run
        assert "earlier" in tab.evaluate(PICKED_JS), tab.evaluate(PICKED_JS)
        assert earlier in tab.url, tab.url
    finally:
        proc.kill()
