"""Session-wide test environment: wandb offline and isolated, runs under tmp dirs."""

from __future__ import annotations

import atexit
import os
import shutil
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
# W&B's switch of system metrics, which jaxdash's client honours too: off unless a test turns it on
# (tests/test_client_console.py), since each sample is a record of its own that row-by-row comparisons would meet.
os.environ["WANDB_X_DISABLE_STATS"] = "true"
os.environ.pop("WANDB_DIR", None)  # honoured by the W&B writer: W&B files stay in each run's directory
# The page's warm training worker (a process that imports JAX before a Start) is off: every app a test
# runs, AppTest's included, started one (~2 CPU s of imports each, 29 in a suite, most never used).
# The tests of the worker turn it on (test_warm_worker_page.py, test_live_browser.py's warm server).
os.environ["JAXDASH_WARM_WORKER"] = "0"
if "JAXDASH_RUNS" not in os.environ:
    os.environ["JAXDASH_RUNS"] = tempfile.mkdtemp(prefix="jaxdash-runs-")
    atexit.register(shutil.rmtree, os.environ["JAXDASH_RUNS"], True)
atexit.register(shutil.rmtree, _WANDB_HOME, True)  # each pytest process's folders go when it exits
# One JAX compilation cache for the pytest process and every trainer it starts, also under a test's own
# XDG_CACHE_HOME or HOME (the trainers' default folder is under it): a warm cache skips XLA compiles.
os.environ.setdefault(
    "JAX_COMPILATION_CACHE_DIR",
    str(Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "jaxdash" / "jax"),
)

FASHION_DIR = Path("/usr/share/datasets/fashion-mnist")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The longest files first (tests/run_order.py), so that no worker starts a long file last."""
    from tests import run_order

    run_order.longest_first(items)


def pytest_configure(config: pytest.Config) -> None:
    """Tests that train in this process use JAX's on-disk compilation cache, as `python -m training` runs do
    (the same folder, $JAX_COMPILATION_CACHE_DIR above, warm from earlier runs); $JAXDASH_JIT_CACHE=0 turns it off."""
    from training.runs.warm_worker import enable_compilation_cache

    enable_compilation_cache()


@pytest.fixture(autouse=True)
def _run_watchers_stopped():  # noqa: ANN202 - a generator fixture
    """After each test, stop the run watchers and run index keepers its AppTest pages started in this process: one
    thread each per runs root, ~100 of them in a worker by its last test otherwise."""
    yield
    from runstore import index_keeper, run_watch

    run_watch.stop_all()
    index_keeper.stop_all()


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


# -- one Streamlit server and one Chromium per pytest session (per xdist worker) -----------------------
# Starting either costs seconds of CPU on this 2-core machine, dozens of times a run when each test had
# its own. Tests that share the server get its runs root emptied of what they wrote (`server`, `served`);
# a test whose server needs other settings (a logdir, a TMPDIR, a warm worker, huge runs) starts its own.
SHARED_SERVER_ENV = {"WANDB_MODE": "disabled", "JAXDASH_WARM_WORKER": "0"}


@pytest.fixture(scope="session")
def session_server(tmp_path_factory: pytest.TempPathFactory):  # noqa: ANN201 - a generator fixture
    """The session's dashboard server (W&B off, no warm worker) and its runs root: (server, runs root).

    Use `server` (emptied after each test) or `served` (after each module) rather than this."""
    from dashboard.server.serve import start_server

    root = tmp_path_factory.mktemp("session-server") / "runs"
    root.mkdir()
    srv = start_server(root, root.parent / "streamlit.log", env=SHARED_SERVER_ENV)
    yield srv, root
    srv.stop()


def _emptied(srv: object, root: Path):  # noqa: ANN202 - a generator
    """Yield (server, root); afterwards remove what was written meanwhile under `root` and beside it
    (runs, mirrors, a test's files "outside" the root)."""
    import shutil

    if srv.proc.poll() is not None:  # type: ignore[attr-defined]
        pytest.fail(f"the session's dashboard server exited ({srv.proc.returncode}); see {srv.log}")  # type: ignore[attr-defined]
    before = {p for folder in (root, root.parent) for p in folder.iterdir()}
    yield srv, root
    for p in [p for folder in (root, root.parent) for p in folder.iterdir() if p not in before]:
        if p.is_dir() and not p.is_symlink():
            shutil.rmtree(p, ignore_errors=True)
        else:
            p.unlink(missing_ok=True)


@pytest.fixture
def server(session_server: tuple):  # noqa: ANN201 - a generator fixture
    """The session's dashboard server on a runs root with nothing of earlier tests: (server, runs root)."""
    yield from _emptied(*session_server)


@pytest.fixture(scope="module")
def served(session_server: tuple):  # noqa: ANN201 - a generator fixture
    """The session's dashboard server, its runs root holding only what this module writes: (server, runs root).
    Read-only pages: no W&B, no warm worker."""
    yield from _emptied(*session_server)


class _SharedPlaywright:
    """`sync_playwright()` for the whole test run: Playwright's sync API refuses a second instance in one
    thread while another lives, so every `with sync_playwright() as p:` of a test gets this one (started on
    first use, stopped when pytest ends), and the shared Chromium is one of its browsers."""

    playwright = None
    original = None

    def __enter__(self):  # noqa: ANN204
        if _SharedPlaywright.playwright is None:
            _SharedPlaywright.playwright = _SharedPlaywright.original().start()
        return _SharedPlaywright.playwright

    def __exit__(self, *exc: object) -> None:
        pass  # stays for the next test; pytest_unconfigure stops it

    start = __enter__


def _share_playwright() -> None:
    try:
        import playwright.sync_api as sync_api
    except ImportError:
        return
    if _SharedPlaywright.original is None:
        _SharedPlaywright.original = sync_api.sync_playwright
        sync_api.sync_playwright = _SharedPlaywright


_share_playwright()


def pytest_unconfigure(config: pytest.Config) -> None:
    if _SharedPlaywright.playwright is not None:
        _SharedPlaywright.playwright.stop()
        _SharedPlaywright.playwright = None


REBINDING_HOST = "rebind.attacker.example"  # an attacker's name that the session's browser resolves to 127.0.0.1


@pytest.fixture(scope="session")
def chromium():  # noqa: ANN201 - a generator fixture
    """The session's headless Chromium (Playwright's Browser); skips where there is none. It resolves
    `REBINDING_HOST` to this machine, as a DNS-rebinding page would (tests/test_safety_host.py)."""
    from dashboard.server.serve import CHROMIUM_ARGS, TEST_CHROMIUM

    if not Path(TEST_CHROMIUM).exists():
        pytest.skip(f"no Chromium at {TEST_CHROMIUM}")
    sync_api = pytest.importorskip("playwright.sync_api")
    args = [*CHROMIUM_ARGS, f"--host-resolver-rules=MAP {REBINDING_HOST} 127.0.0.1"]
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=TEST_CHROMIUM, args=args)
    yield browser
    browser.close()


@pytest.fixture(scope="session")
def browsing(chromium: object):  # noqa: ANN201 - a generator fixture
    """The session's one browser context, 1400x950: its HTTP cache and V8's code cache keep Streamlit's
    scripts compiled from one test's page to the next (4 loads of the dashboard cost Chromium 5.4 CPU s in
    a context each, 1.3-2.4 s in one context)."""
    context = chromium.new_context(viewport={"width": 1400, "height": 950})  # type: ignore[attr-defined]
    yield context
    context.close()


@pytest.fixture
def tab(browsing: object):  # noqa: ANN201 - a generator fixture
    """A new tab of the session's browser context, 1400x950; its cookies are cleared after the test (the
    dashboard keeps nothing in the browser's storage). A test that needs a context of its own makes one."""
    page = browsing.new_page()  # type: ignore[attr-defined]
    yield page
    page.close()
    browsing.clear_cookies()  # type: ignore[attr-defined]
