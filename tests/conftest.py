"""Session-wide test environment: wandb offline and isolated, runs under tmp dirs."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

# Set before anything imports wandb: no test may reach the network or the user's ~/.config.
_WANDB_HOME = tempfile.mkdtemp(prefix="jaxdash-wandb-")
os.environ["WANDB_MODE"] = "offline"
os.environ["WANDB_SILENT"] = "true"
os.environ.pop("WANDB_API_KEY", None)
for var in ("WANDB_CACHE_DIR", "WANDB_CONFIG_DIR", "WANDB_DATA_DIR"):
    os.environ[var] = _WANDB_HOME
os.environ.pop("WANDB_DIR", None)  # honoured by the W&B writer: W&B files stay in each run's directory
os.environ.setdefault("JAXDASH_RUNS", tempfile.mkdtemp(prefix="jaxdash-runs-"))

FASHION_DIR = Path("/usr/share/datasets/fashion-mnist")


@pytest.fixture
def runs_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh runs root, also exported as $JAXDASH_RUNS for subprocesses."""
    root = tmp_path / "runs"
    root.mkdir()
    monkeypatch.setenv("JAXDASH_RUNS", str(root))
    return root


@pytest.fixture
def root(runs_root: Path) -> Path:
    """The app's runs root (conftest's `runs_root`, exported as JAXDASH_RUNS)."""
    return runs_root


@pytest.fixture(scope="session")
def fashion_dir() -> Path:
    """Debian's Fashion-MNIST; required (the CI installs dataset-fashion-mnist)."""
    if not (FASHION_DIR / "train-images-idx3-ubyte.gz").exists():
        pytest.fail("Fashion-MNIST missing: apt-get install -y dataset-fashion-mnist (scripts/setup.sh does this)")
    return FASHION_DIR


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory):  # noqa: ANN201 - a generator fixture
    """A real dashboard server (dashboard/server_app.py) on its own empty runs root, for one test module:
    (server, runs root). Read-only pages: no W&B, no warm worker."""
    from dashboard.server.serve import start_server

    root = tmp_path_factory.mktemp("served") / "runs"
    root.mkdir()
    srv = start_server(root, root.parent / "streamlit.log", env={"WANDB_MODE": "disabled", "JAXDASH_WARM_WORKER": "0"})
    yield srv, root
    srv.stop()
