"""Differential W&B conformance: every probe script run with real wandb (offline) and with `import jaxdash as wandb`.

One test per probe (tests/wandb_conformance/probes/). Both runs are real subprocesses; what W&B stored
(read with `wandb leet inspect --json`) is compared with our run folder (runstore) and with the W&B copy
our writer process wrote: exit code, printed "OUT" lines, run state, project, name, chosen id, group,
job type, tags, notes, config, summary, and every history step with its values and media. A failure
lists each difference as `field: ours (W&B: theirs)`.

The selected probes' scripts run as tasks of one pool (`Runs`, WORKERS subprocesses at a time: W&B's and
jaxdash's run of a probe side by side), queued at the first test, so a test waits only for its own; `-k
<probe>` runs only that probe's scripts. Under pytest-xdist the file runs whole on one worker
(scripts/test.sh: `--dist loadfile`), whose pool holds every probe; `--dist load` or `worksteal` would
split the file across workers that each queued every probe. W&B's outcome of a probe is kept on disk until the probe, wandb or
the comparer change (reference.py; CONFORMANCE_CACHE=off runs it every time). Each W&B process starts its
own wandb-core, as a user's script does: with one shared service (`wandb beta core start`, WANDB_SERVICE)
a script ending without `finish()` read back with no history (the service still writing) and `init(dir=)`
stored nowhere under the probe's folder, so W&B's outcome would not be what a user gets.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from tests.wandb_conformance import compare, reference, running

ROOT = Path(__file__).resolve().parents[1]
PROBES = running.all_probes()
WORKERS = int(os.environ.get("CONFORMANCE_WORKERS", "3"))  # subprocesses in flight (mostly waiting on I/O)
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


class Runs:
    """Each probe's two runs, W&B's (cached, see reference.py) and jaxdash's, as separate tasks of one pool, so
    WORKERS subprocesses are always in flight. At the first test every selected probe is queued in test order."""

    def __init__(self, root: Path, probes: list[running.Probe], workers: int) -> None:
        self.root, self.probes = root, probes
        self.pool = ThreadPoolExecutor(workers)
        self.futures: dict[str, tuple[Future, Future]] = {}

    def _submit(self, probe: running.Probe) -> tuple[Future, Future]:
        if probe.name not in self.futures:
            where = self.root / probe.name
            want = self.pool.submit(reference.reference, probe, where / "wandb")
            ours = self.pool.submit(running.run_probe, probe, "jaxdash", where / "jaxdash")
            self.futures[probe.name] = (want, ours)
        return self.futures[probe.name]

    def get(self, probe: running.Probe) -> tuple[dict[str, Any], dict[str, list[str]], running.Result]:
        """(W&B's expected outcome, W&B's own differences from it, jaxdash's result) of `probe`."""
        for other in self.probes:
            self._submit(other)
        want, ours = self._submit(probe)
        return (*want.result(), ours.result())

    def close(self) -> None:
        """Wait for what is running; drop what has not started."""
        self.pool.shutdown(wait=True, cancel_futures=True)


@pytest.fixture(scope="session")
def conformance(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runs]:
    """The probes' runs, started as the tests ask for them."""
    runs = Runs(tmp_path_factory.mktemp("wandb-conformance"), _selected(request.session), WORKERS)
    yield runs
    runs.close()


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
def test_probe_matches_wandb(probe: running.Probe, conformance: Runs) -> None:
    """What jaxdash stored for the probe (run folder and W&B copy) is what W&B stored for it."""
    want, own, ours = conformance.get(probe)
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


def test_the_docs_table_lists_every_probe_with_its_own_call() -> None:
    """docs/wandb.md's table of W&B calls is the probes' own: one row per probe (or a test file of its own), its `# call:` text, and
    "yes" for jaxdash exactly where the probe is not a known difference; the pass count above it agrees."""
    text = (ROOT / "docs" / "wandb.md").read_text()
    table = text.split("| call | probe | wandb | jaxdash | trackio |\n|---|---|---|---|---|\n", 1)[1].split("\n\n")[0]
    rows = {}
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells[1].startswith("tests/"):  # a call compared by a test of its own instead of a probe
            assert (ROOT / cells[1]).is_file(), f"the table names {cells[1]}, which does not exist"
        else:
            rows[cells[1]] = cells
    by_name = {p.name: p for p in PROBES}
    assert sorted(rows) == sorted(by_name), "rows without a probe, or probes without a row"
    for name, (call, _, _, ours, _) in rows.items():
        assert call == by_name[name].call, f"{name}: the table says {call!r}, the probe's `# call:` line says otherwise"
        assert ours.startswith("yes") == (name not in KNOWN), f"{name}: jaxdash column {ours!r}"
    passing = len(PROBES) - len(KNOWN)
    assert f"jaxdash {passing} of {len(PROBES)} probes" in text, "the pass count above the table"
