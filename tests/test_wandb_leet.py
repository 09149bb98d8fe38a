"""tests/wandb_leet.py prints what `wandb leet inspect` prints, on a real offline W&B run, for every PATH form;
its read of a closed run waits for the .wandb file's end (W&B's exit record), which wandb-core writes just after
`run.finish()` returns."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests import wandb_leet

SCRIPT = """
import wandb
run = wandb.init(project="leet", config={"lr": 0.1})
for step in range(3):
    run.log({"loss": 1.0 / (step + 1)})
run.summary["best"] = 0.25
run.finish()
"""


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([wandb_leet.WANDB_CLI, "leet", "inspect", *args], capture_output=True, text=True, timeout=60)


@pytest.fixture(scope="module")
def wandb_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The .wandb file of a finished offline run of real wandb (a process that has exited: the file is whole)."""
    where = tmp_path_factory.mktemp("leet")
    env = {**os.environ, "WANDB_DIR": str(where), "WANDB_MODE": "offline", "WANDB_SILENT": "true"}
    subprocess.run([sys.executable, "-c", SCRIPT], env=env, check=True, timeout=120, cwd=where)
    (found,) = where.glob("wandb/offline-run-*/run-*.wandb")
    return found


def test_inspect_prints_the_clis_output(wandb_file: Path) -> None:
    """A .wandb file, its run folder and the wandb folder, with --json and --summary --json: the same bytes."""
    for path, flags in [
        (wandb_file, ("--json",)),
        (wandb_file.parent, ("--summary", "--json")),
        (wandb_file.parent.parent, ("--json",)),
    ]:
        ours, theirs = wandb_leet.inspect(path, *flags), _cli(*flags, str(path))
        assert (ours.returncode, ours.stdout) == (theirs.returncode, theirs.stdout), (path, flags)
        assert '"loss"' in ours.stdout or '"best"' in ours.stdout


def test_a_missing_path_fails_as_the_cli_does(tmp_path: Path) -> None:
    """The CLI's exit code 1 and its message naming the path."""
    missing = tmp_path / "nowhere"
    ours, theirs = wandb_leet.inspect(missing, "--json"), _cli("--json", str(missing))
    assert ours.returncode == theirs.returncode == 1
    assert ours.stderr.strip() == theirs.stderr.strip().splitlines()[-1] == f"Error: Path does not exist: {missing}"


def test_a_closed_runs_read_waits_for_the_files_end(wandb_file: Path, tmp_path: Path, monkeypatch) -> None:
    """The folder as a reader may find it right after `run.finish()` returned (wandb-core's last write, with
    the last rows and the exit record, still to come): `finished_records` reads again until the exit record
    is there and returns every record; `records` returns what is there now; no end at all is an error."""
    whole = wandb_file.read_bytes()
    expected = wandb_leet.records(wandb_file)
    assert [r["type"] for r in expected][-1] == "exit"
    copy = tmp_path / "wandb" / wandb_file.parent.name / wandb_file.name
    copy.parent.mkdir(parents=True)
    copy.write_bytes(whole[: len(whole) // 2])
    reads: list[list[str]] = []
    real_records = wandb_leet.records

    def read_then_finish(path: str | Path) -> list[dict]:
        found = real_records(path)
        reads.append([r["type"] for r in found])
        if len(reads) == 1:
            with copy.open("ab") as f:  # wandb-core's last write lands after the first read
                f.write(whole[len(whole) // 2 :])
        return found

    monkeypatch.setattr(wandb_leet, "records", read_then_finish)
    assert wandb_leet.finished_records(copy.parent) == expected
    assert len(reads) == 2 and "exit" not in reads[0] and reads[0].count("history") < 3
    assert wandb_leet.finished_summary(copy.parent)["summary"]["best"] == 0.25
    monkeypatch.undo()
    copy.write_bytes(whole[: len(whole) // 2])
    with pytest.raises(AssertionError, match="no exit record after 0 s"):
        wandb_leet.finished_records(copy.parent, timeout=0.2)
