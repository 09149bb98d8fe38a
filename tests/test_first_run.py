"""A first run as a new user makes it: a script from any folder and the dashboard meet in one runs folder.

No $JAXDASH_RUNS here (the suite's conftest sets one; these tests take it out of the environment they
start): the per-user default, $XDG_DATA_HOME/jaxdash/runs else ~/.local/share/jaxdash/runs, with HOME
pointing into the test's temporary folder.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import psutil
import pytest

from dashboard.server.serve import free_port
from runstore import run_store

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = """\
import jaxdash

run = jaxdash.init(project="first", name="from-tmp", wandb="disabled", tensorboard=False)
for step in range(3):
    run.log({"loss": 1.0 / (step + 1)}, step=step)
run.finish()
"""


def user_env(tmp_path: Path) -> dict[str, str]:
    """A new user's environment: HOME in tmp, no runs folder chosen, the client's lines not silenced."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    drop = ("JAXDASH_RUNS", "XDG_DATA_HOME", "WANDB_SILENT")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env.update(HOME=str(home), PYTHONPATH=str(ROOT), WANDB_MODE="disabled", JAXDASH_WARM_WORKER="0")
    return env


def run_script(tmp_path: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    """SCRIPT run from a folder of its own (not the checkout), to its end."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "train.py").write_text(SCRIPT)
    out = subprocess.run([sys.executable, "train.py"], cwd=work, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    assert not (work / "runs").exists(), "nothing lands in the folder the script runs from"
    return out


def test_a_script_from_any_folder_writes_where_the_dashboard_lists_runs(tmp_path: Path) -> None:
    env = user_env(tmp_path)
    out = run_script(tmp_path, env)
    root = tmp_path / "home" / ".local" / "share" / "jaxdash" / "runs"
    (run_dir,) = run_store.run_folders(root)
    first = next(line for line in out.stderr.splitlines() if line.startswith("jaxdash:"))
    assert first == (
        f"jaxdash: run data is saved locally in {run_dir} (runs folder {root}; $JAXDASH_RUNS picks another)"
    )
    # The dashboard's process: the same user, started from the checkout (scripts/start.sh's folder).
    listed = subprocess.run(
        [sys.executable, "-c", "from runstore import run_store; print(*run_store.run_folders(), sep='\\n')"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert listed.stdout.splitlines() == [str(run_dir)], listed.stderr[-2000:]


def test_the_default_follows_xdg_and_the_variable_overrides_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("JAXDASH_RUNS")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    assert run_store.runs_root() == tmp_path / "data" / "jaxdash" / "runs"
    monkeypatch.setenv("XDG_DATA_HOME", "relative/data")  # the XDG spec: a relative path is ignored
    assert run_store.runs_root() == tmp_path / "home" / ".local" / "share" / "jaxdash" / "runs"
    monkeypatch.setenv("JAXDASH_RUNS", str(tmp_path / "mine"))
    assert run_store.runs_root() == tmp_path / "mine"
    assert run_store.runs_root(tmp_path / "given") == tmp_path / "given", "--runs-root and runs_root= win"


def test_the_jaxdash_command_serves_the_default_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from jaxdash import cli

    monkeypatch.delenv("JAXDASH_RUNS")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.chdir(tmp_path)
    _, env = cli.command([])
    assert env["JAXDASH_RUNS"] == str(tmp_path / "data" / "jaxdash" / "runs")


# ---- the jaxdash command after the README's set-up ------------------------------------------------------------


def test_setup_writes_the_console_scripts_once(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    write = [sys.executable, str(ROOT / "scripts" / "console_scripts.py"), str(bin_dir)]
    subprocess.run(write, check=True, timeout=60)
    made = {p.name: p.stat().st_mtime_ns for p in bin_dir.iterdir()}
    assert set(made) == {"jaxdash", "jaxdash-train"}, "one per entry of pyproject's [project.scripts]"
    subprocess.run(write, check=True, timeout=60)
    assert {p.name: p.stat().st_mtime_ns for p in bin_dir.iterdir()} == made, "a second set-up rewrites nothing"
    out = subprocess.run([bin_dir / "jaxdash", "--help"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.startswith("usage: jaxdash"), out.stderr[-2000:]
    out = subprocess.run([bin_dir / "jaxdash-train", "--help"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "python -m training TASK" in out.stdout, out.stderr[-2000:]


@pytest.mark.parametrize("command", [["jaxdash"], ["python", "-m", "jaxdash"]])
def test_the_venv_has_the_jaxdash_command(tmp_path: Path, command: list[str]) -> None:
    """`.venv/bin/jaxdash` (scripts/setup.sh, which the suite's scripts/test.sh runs) and `python -m jaxdash`."""
    exe = Path(sys.prefix) / "bin" / command[0]
    assert exe.is_file(), f"no {exe}: run ./scripts/setup.sh"
    out = subprocess.run([exe, *command[1:], "--help"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "--logdir" in out.stdout, out.stderr[-2000:]
    shown = subprocess.run(
        [exe, *command[1:], "--logdir", str(tmp_path), "--print-command"], capture_output=True, text=True, timeout=60
    )
    assert shown.returncode == 0 and " streamlit run " in shown.stdout, shown.stderr[-2000:]


# ---- Streamlit's chrome: no Deploy button, no popup offering AI agent skills -------------------------------------

# Streamlit's own reading of a command line's options: the toolbar mode and why its agent-skills card is withheld.
STREAMLIT_DECIDES = """
import json, sys
from streamlit import config
from streamlit.web import skills

config.get_config_options(force_reparse=True, options_from_flags=json.loads(sys.argv[1]))
print(json.dumps([config.get_option("client.toolbarMode"), skills.nudge_suppression_reason(sys.argv[2])]))
"""


def streamlit_flags(command: list[str]) -> dict[str, Any]:
    """The `--section.option value` pairs of a `streamlit run APP ...` command line."""
    rest = iter(command[command.index("run") + 2 :])
    return {key[2:]: {"true": True, "false": False}.get(value, value) for key, value in zip(rest, rest, strict=True)}


@pytest.mark.parametrize("launcher", ["start.sh", "jaxdash"])
def test_streamlit_shows_no_deploy_button_and_no_agent_popup(tmp_path: Path, launcher: str) -> None:
    env = user_env(tmp_path)
    (tmp_path / "home" / ".claude").mkdir()  # an AI coding agent's folder: where Streamlit offers its card
    env["DISPLAY"] = ":0"  # a desktop session: Streamlit is not headless by default there
    if launcher == "start.sh":
        dry = {**env, "JAXDASH_START_DRY_RUN": "1"}
        shown = subprocess.run([ROOT / "scripts" / "start.sh"], env=dry, capture_output=True, text=True, timeout=60)
        command, cwd = shown.stdout.splitlines(), ROOT  # start.sh runs it from the checkout
    else:
        shown = subprocess.run([Path(sys.prefix) / "bin" / "jaxdash", "--print-command"], env=env, cwd=tmp_path,
                               capture_output=True, text=True, timeout=60)  # fmt: skip
        command, cwd = shown.stdout.split(), tmp_path  # from the user's folder: no .streamlit/config.toml there
    assert shown.returncode == 0, shown.stderr[-2000:]
    decide = [sys.executable, "-c", STREAMLIT_DECIDES, json.dumps(streamlit_flags(command)), str(ROOT / "dashboard")]
    out = subprocess.run(decide, cwd=cwd, env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr[-2000:]
    toolbar, withheld = json.loads(out.stdout.splitlines()[-1])
    assert toolbar == "minimal", "no Deploy button, no developer menu"
    assert withheld == "welcome_hidden", "Streamlit withholds the card when its start lines are off"


# ---- in a browser: the dashboard started by the README's command shows the script's run ---------------------


def start_dashboard(env: dict[str, str], log: Path) -> tuple[subprocess.Popen, str]:
    """`./scripts/start.sh` (the README's command) headless on a free port: (its process, its URL)."""
    port = free_port()
    with open(log, "wb") as f:
        proc = subprocess.Popen(
            [str(ROOT / "scripts" / "start.sh"), "--server.port", str(port)],
            cwd=env["HOME"], env={**env, "HEADLESS": "true", "SKIP_APT": "1"},
            stdout=f, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:  # until the server answers its health check, or exits
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=1) as r:
                if r.status == 200:
                    return proc, url
        except OSError:
            try:
                proc.wait(timeout=0.2)  # paces the polls; returns at once if start.sh exited
            except subprocess.TimeoutExpired:
                continue
            pytest.fail(f"scripts/start.sh exited with {proc.returncode}: {log.read_text()[-3000:]}")
    proc.terminate()
    pytest.fail(f"scripts/start.sh did not serve within 2 minutes: {log.read_text()[-3000:]}")


IDLE_RSS_MIB = 250  # an idle dashboard's processes together (no training started: no warm worker yet)


def tree_rss_mib(pid: int) -> dict[str, int]:
    """Resident memory (MiB) of process `pid` and all its descendants, by "name pid"."""
    top = psutil.Process(pid)
    return {f"{p.name()} {p.pid}": p.memory_info().rss >> 20 for p in [top, *top.children(recursive=True)]}


@pytest.mark.browser
def test_a_script_run_from_tmp_shows_on_the_dashboard_of_the_readme(tmp_path: Path, tab: Any) -> None:
    env = user_env(tmp_path)
    run_script(tmp_path, env)
    del env["JAXDASH_WARM_WORKER"]  # the README's command as a user runs it: warm workers on, the default
    proc, url = start_dashboard(env, tmp_path / "streamlit.log")
    try:
        tab.goto(f"{url}/runs")
        # The runs table is a canvas grid: its cells are in the page, hidden, for screen readers.
        tab.locator("[role=gridcell]", has_text="from-tmp").first.wait_for(state="attached", timeout=60_000)
        root = tmp_path / "home" / ".local" / "share" / "jaxdash" / "runs"
        tab.locator("code", has_text=str(root)).first.wait_for(timeout=10_000)  # the page says where runs go
        # A fresh server's first page: no Deploy button (Streamlit shows it until the app's options apply).
        assert tab.get_by_test_id("stAppDeployButton").count() == 0
        assert tab.get_by_role("button", name="Deploy").count() == 0
        # Idle with a page open (no run started): the server and every process it started, together.
        rss_mib = tree_rss_mib(proc.pid)
        assert sum(rss_mib.values()) < IDLE_RSS_MIB, f"an idle dashboard's processes hold {rss_mib} MiB"
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@pytest.mark.browser
def test_enter_in_run_name_does_not_start_a_run(server: tuple[Any, Path], tab: Any) -> None:
    srv, runs = server
    tab.goto(f"{srv.url}/new")
    name = tab.get_by_role("textbox", name="Run name")
    name.wait_for(timeout=60_000)
    inputs = "document.querySelectorAll('[data-testid=stTextInput]').length"
    before = tab.evaluate(inputs)
    name.fill("enter-pressed")
    name.press("Enter")
    # A rerun asked for after the Enter: the population lists appear once it has run, and a form submitted
    # by the Enter would have run (started a run, gone to Live) before it.
    tab.get_by_text("Population: train several variants at once").click()
    tab.wait_for_function(f"{inputs} > {before}", timeout=30_000, polling=100)
    assert tab.url.endswith("/new") and run_store.run_folders(runs) == []
