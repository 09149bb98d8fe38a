"""Differential W&B conformance: every probe script run with real wandb (offline) and with `import jaxdash as wandb`.

One test per probe (tests/wandb_conformance/probes/). Both runs are real subprocesses; what W&B stored
(read with `wandb leet inspect --json`) is compared with our run folder (runstore) and with the W&B copy
our writer process wrote: exit code, printed "OUT" lines, run state, project, name, chosen id, group,
job type, tags, notes, config, summary, and every history step with its values and media. A failure
lists each difference as `field: ours (W&B: theirs)`.

The selected probes run once per session, two subprocesses at a time (the fixture below), so a test
reads its result; `-k <probe>` runs only that probe's scripts. W&B's outcome of a probe is kept on disk
until the probe, wandb or the comparer change (reference.py; CONFORMANCE_CACHE=off runs it every time).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from tests.wandb_conformance import compare, reference, running

PROBES = running.all_probes()
WORKERS = 2
# Differences we know of and have not closed yet (issue #35 stays open for them): each is a strict xfail,
# so the day one is fixed its test fails until it is taken off this list.
KNOWN: dict[str, str] = {}


def _selected(session: pytest.Session) -> list[running.Probe]:
    names = {
        item.callspec.params["probe"].name
        for item in session.items
        if hasattr(item, "callspec") and "probe" in item.callspec.params
    }
    return [p for p in PROBES if p.name in names]


def _check(probe: running.Probe, root: Path) -> tuple[dict[str, Any], dict[str, list[str]], running.Result]:
    want, own = reference.reference(probe, root / probe.name / "wandb")
    return want, own, running.run_probe(probe, "jaxdash", root / probe.name / "jaxdash")


@pytest.fixture(scope="session")
def conformance(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple]:
    """{probe name: (W&B's expected outcome, W&B's own differences from it, jaxdash's result)} of the selected probes."""
    root = tmp_path_factory.mktemp("wandb-conformance")
    probes = _selected(request.session)
    with ThreadPoolExecutor(WORKERS) as pool:
        return dict(zip([p.name for p in probes], pool.map(lambda p: _check(p, root), probes), strict=True))


def test_there_are_enough_probes() -> None:
    """The issue asks for at least 50 probe scripts, each with the line `import wandb`."""
    assert len(PROBES) >= 50, f"{len(PROBES)} probes in {running.PROBES}"


@pytest.mark.parametrize(
    "probe",
    [
        pytest.param(p, marks=pytest.mark.xfail(strict=True, reason=KNOWN[p.name])) if p.name in KNOWN else p
        for p in PROBES
    ],
    ids=[p.name for p in PROBES],
)
def test_probe_matches_wandb(probe: running.Probe, conformance: dict[str, tuple]) -> None:
    """What jaxdash stored for the probe (run folder and W&B copy) is what W&B stored for it."""
    want, own, ours = conformance[probe.name]
    if probe.expect:  # where W&B itself loses data (e.g. SIGTERM) the probe says what must be kept instead
        own = {}
    if any(own.values()):
        pytest.fail(f"W&B's own run of {probe.name} does not read back:\n{compare.render(own)}", pytrace=False)
    found = compare.diff(want, ours)
    if any(found.values()):
        pytest.fail(
            f"{probe.name}: jaxdash differs from W&B ({ours.tmp})\n{compare.render(found)}\n"
            f"jaxdash stderr tail:\n{ours.tail()}",
            pytrace=False,
        )
