"""Loopback by default: the project config and start.sh bind 127.0.0.1; serving to others is explicit and warned."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import tomllib
import urllib.request
from pathlib import Path

import psutil
import pytest
from streamlit import config as st_config
from streamlit.testing.v1 import AppTest

from dashboard.processes import tensorboard_server

ROOT = Path(__file__).resolve().parents[1]
APP = str(ROOT / "dashboard" / "app.py")
SERVED = str(ROOT / "dashboard" / "server_app.py")  # what scripts/start.sh serves: the pages plus the CSV route
WARNING = "anyone who can reach it can start, stop and delete"


def start_sh(*args: str, **env: str) -> subprocess.CompletedProcess:
    """scripts/start.sh in dry-run mode: what it would run, and what it says."""
    full = {k: v for k, v in os.environ.items() if k != "JAXDASH_ADDRESS"}
    full.update(JAXDASH_START_DRY_RUN="1", **env)
    return subprocess.run(["scripts/start.sh", *args], cwd=ROOT, env=full, capture_output=True, text=True, timeout=30)


def test_project_config_binds_loopback_with_xsrf_protection() -> None:
    server = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())["server"]
    assert server["address"] == "127.0.0.1"
    assert server["enableXsrfProtection"] is True and server["enableCORS"] is True


def test_start_script_binds_loopback_unless_told_and_warns_when_told() -> None:
    default = start_sh()
    assert default.returncode == 0 and default.stderr == ""
    cmd = default.stdout.split()
    assert cmd[cmd.index("--server.address") + 1] == "127.0.0.1"
    assert cmd[cmd.index("--server.enableXsrfProtection") + 1] == "true"
    for shared in (start_sh("--address", "0.0.0.0"), start_sh(JAXDASH_ADDRESS="0.0.0.0")):
        cmd = shared.stdout.split()
        assert cmd[cmd.index("--server.address") + 1] == "0.0.0.0"
        assert "WARNING" in shared.stderr and "running code on this machine" in shared.stderr
    assert start_sh("--address").returncode == 2
    assert start_sh("--server.address", "0.0.0.0").returncode == 2  # only the explicit, warned flag


def test_a_real_server_started_from_the_repository_listens_on_loopback_only(tmp_path: Path) -> None:
    """`streamlit run` from the repository root with no address flag: the project config decides."""
    port = tensorboard_server.free_port()
    cmd = [sys.executable, "-m", "streamlit", "run", SERVED, "--server.headless", "true", "--server.port", str(port)]
    env = {**os.environ, "JAXDASH_RUNS": str(tmp_path / "runs"), "JAXDASH_WARM_WORKER": "0"}
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=1).close()
                break
            except OSError:
                time.sleep(0.3)
        listening = {
            c.laddr.ip for c in psutil.Process(proc.pid).net_connections("inet") if c.status == psutil.CONN_LISTEN
        }
        assert listening == {"127.0.0.1"}, listening
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.mark.parametrize("how", ["start.sh", "jaxdash"])
def test_both_launchers_serve_on_a_first_start_with_no_terminal(tmp_path: Path, how: str) -> None:
    """Streamlit's first start asks for an e-mail address and, with no terminal, never serves: the README's
    start command and `jaxdash` answer it as Enter would (an empty address) and serve, not headless."""
    port = tensorboard_server.free_port()
    home = tmp_path / "home"
    home.mkdir()
    env = {**os.environ, "HOME": str(home), "JAXDASH_RUNS": str(tmp_path / "runs"), "JAXDASH_WARM_WORKER": "0"}
    env.pop("JAXDASH_ADDRESS", None)
    if how == "start.sh":
        cmd = ["scripts/start.sh", "--server.port", str(port)]
    else:
        cmd = [sys.executable, "-m", "jaxdash.cli", "--runs", str(tmp_path / "runs"), "--port", str(port)]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, start_new_session=True)  # fmt: skip
    try:
        deadline, served = time.monotonic() + 60, False
        while not served and time.monotonic() < deadline and proc.poll() is None:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=1).close()
                served = True
            except OSError:
                time.sleep(0.3)
        assert served, f"{how} did not serve in 60 s"
        assert tomllib.loads((home / ".streamlit" / "credentials.toml").read_text()) == {"general": {"email": ""}}
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(10)


@pytest.mark.parametrize(("address", "warned"), [("127.0.0.1", False), ("0.0.0.0", True), ("", True)])
def test_page_warns_when_the_server_is_not_loopback(
    address: str, warned: bool, runs_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JAXDASH_WARM_WORKER", "0")
    before = st_config.get_option("server.address")
    st_config.set_option("server.address", address or None)
    try:
        at = AppTest.from_file(APP, default_timeout=60)
        at.run()
    finally:
        st_config.set_option("server.address", before)
    assert not at.exception
    assert any(WARNING in w.value for w in at.warning) is warned


def test_tensorboard_binds_the_given_host_and_never_writes_a_predictable_tmp_log(tmp_path: Path) -> None:
    port = tensorboard_server.free_port()
    target = tmp_path / "victim.txt"
    target.write_text("precious")
    old_log = Path("/tmp") / f"jaxdash-tensorboard-{port}.log"  # the old predictable name, planted as a link
    old_log.unlink(missing_ok=True)
    old_log.symlink_to(target)
    try:
        tb = tensorboard_server.start_tensorboard(tmp_path / "runs", port=port, host="127.0.0.1")
        try:
            assert tb.proc.args[tb.proc.args.index("--host") + 1] == "127.0.0.1"
            assert tb.log is not None and tb.log.stat().st_mode & 0o077 == 0  # private to this user
            listening = {
                c.laddr.ip for c in psutil.Process(tb.proc.pid).net_connections("inet") if c.laddr.port == port
            }
            assert listening == {"127.0.0.1"}
        finally:
            tensorboard_server.close_tensorboards()
        assert not tb.log.exists()
        assert target.read_text() == "precious"
    finally:
        old_log.unlink(missing_ok=True)


STARTER = """
import sys, time
from pathlib import Path
from dashboard.processes import tensorboard_server
tb = tensorboard_server.start_tensorboard(Path(sys.argv[1]), wait_s=60)
print(tb.proc.pid, flush=True)
time.sleep(600)
"""


@pytest.mark.parametrize("how", ["SIGTERM", "SIGKILL"])
def test_tensorboard_ends_when_the_dashboard_process_ends_however_it_ends(tmp_path: Path, how: str) -> None:
    """The dashboard's TensorBoard never outlives it on a random port (SIGTERM that skips atexit, or kill -9)."""
    starter = subprocess.Popen(
        [sys.executable, "-c", STARTER, str(tmp_path / "runs")], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    tb = psutil.Process(int(starter.stdout.readline()))
    try:
        assert tb.is_running()
        # SIGTERM on a plain Python process skips atexit, as a server killed after its grace period does
        starter.send_signal(getattr(signal, how))
        starter.wait(10)
        tb.wait(timeout=15)  # raises psutil.TimeoutExpired if TensorBoard is left running
    finally:
        starter.kill()
        if tb.is_running():
            tb.kill()
