"""Loaded by every Python process started with `tests.fixtures_runs.hold_env`: installs the hold."""

import os

if os.environ.get("JAXDASH_TEST_HOLD"):
    from tests.fixtures_runs import install_hold

    install_hold(os.environ["JAXDASH_TEST_HOLD"])
