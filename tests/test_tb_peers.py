"""Logdirs written by the real peers (Keras + tf.summary, CLU, the Flax MNIST example's writer, torch), mirrored
while they write and checked against TensorBoard's own HTTP API on the same folder (tests/tb_http.py).

Marked `peers` and left out of the default suite: `./scripts/test.sh -m peers`. The peers live in a venv of
their own (never the project's dependencies), built on first use under ~/.cache/jaxdash-peers
($JAXDASH_PEERS_VENV) and reused: tensorflow-cpu (Keras, tf.summary, flax.metrics.tensorboard), clu (and the
flax, jax and optax it pulls) and torch's CPU build where the package index has it (PyPI's default torch
pulls GBs of CUDA libraries; this machine's index has `torch==2.13.0+cpu`, 190 MB). A peer that does not
install is skipped with pip's last line. tensorboardX is in tests/test_tb_http_conformance.py (default suite).
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from runstore import tb_logdir
from tests import tb_http
from tests.peer_writers import SCRIPTS

pytestmark = [pytest.mark.peers, pytest.mark.timeout(3600)]  # the first builds the venv (minutes)

VENV = Path(os.environ.get("JAXDASH_PEERS_VENV") or Path.home() / ".cache" / "jaxdash-peers")
# (name, pip arguments): each installed on its own, so one that fails leaves the others usable.
# tensorflow-cpu 2.21 no longer pulls tensorboard, which tf.summary's hparams, flax.metrics and torch import.
PACKAGES = [("tensorflow", ["tensorflow-cpu", "tensorboard"]), ("clu", ["clu"]), ("torch", ["torch==2.13.0+cpu"])]
NEEDS = {"keras_and_tf_summary": "tensorflow", "clu_default_writer": "clu", "flax_mnist": "clu", "torch": "torch"}
INSTALL_S = 1800


def _install(python: Path, name: str, args: list[str]) -> str | None:
    """pip install `args` into the peers venv once (a marker file remembers it); None, or why it failed."""
    marker = VENV / f".installed-{name}"
    if marker.exists() and marker.read_text().split() == args:
        return None
    cmd = ["nice", "-n", "10", str(python), "-m", "pip", "install", "--quiet", *args]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=INSTALL_S)
    if done.returncode != 0:
        return (done.stderr.strip().splitlines() or ["pip failed"])[-1]
    marker.write_text(" ".join(args) + "\n")
    return None


@pytest.fixture(scope="module")
def peers(request: pytest.FixtureRequest) -> tuple[Path, dict[str, str | None]]:
    """The peers venv's Python and, per package, None (installed) or why it did not install."""
    if "peers" not in (request.config.option.markexpr or ""):
        pytest.skip("the peers venv is built only when asked for: ./scripts/test.sh -m peers")
    python = VENV / "bin" / "python"
    VENV.parent.mkdir(parents=True, exist_ok=True)
    with open(VENV.parent / f".{VENV.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one builder at a time (pytest-xdist workers share the venv)
        if not python.exists():
            subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True, timeout=300)
        return python, {name: _install(python, name, args) for name, args in PACKAGES}


def _write_while_mirrored(python: Path, script: str, logs: Path, runs: Path) -> None:
    """Run a peer's script in its own process, syncing the mirror while it writes, then once after it exits."""
    logs.mkdir(parents=True)
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "CUDA_VISIBLE_DEVICES": "", "JAX_PLATFORMS": "cpu"}
    proc = subprocess.Popen(
        [str(python), "-c", script, str(logs)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    deadline = time.monotonic() + 600
    while proc.poll() is None and time.monotonic() < deadline:
        tb_logdir.sync(logs, runs)
        time.sleep(0.2)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0 and "done" in out, err[-3000:]
    tb_logdir.sync(logs, runs)


# What each writer must have shown TensorBoard (so an empty answer cannot pass): run -> plugins.
EXPECTED = {
    "keras_and_tf_summary": {
        "keras": {"scalars", "histograms", "images", "hparams"},
        "summary": {"scalars", "images", "histograms", "text", "hparams"},
    },
    "clu_default_writer": {"clu": {"scalars", "images", "histograms", "text", "hparams"}},
    "flax_mnist": {"mnist": {"scalars", "hparams"}},
    "torch": {
        "torch": {"scalars", "images", "histograms", "text"},
        "torch/hp": {"scalars", "hparams"},
        "torch/lr_adam": {"scalars"},
        "torch/lr_sgd": {"scalars"},
    },
}


@pytest.mark.parametrize("writer", sorted(SCRIPTS))
def test_a_peers_logdir_mirrored_while_written_matches_tensorboards_http_api(
    writer: str, peers: tuple[Path, dict[str, str | None]], tmp_path: Path
) -> None:
    python, failed = peers
    if failed[NEEDS[writer]]:
        pytest.skip(f"{NEEDS[writer]} did not install in the peers venv: {failed[NEEDS[writer]]}")
    logs, runs = tmp_path / "logs", tmp_path / "runs"
    _write_while_mirrored(python, SCRIPTS[writer], logs, runs)
    want = tb_http.matched_view(logs, runs)
    shown = {run: {p for p in tb_http.PLUGINS if want[run].get(p)} for run in want}
    assert shown == EXPECTED[writer], shown
