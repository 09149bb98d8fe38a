"""Which checkpoints of a run read back whole: checked in a child process before resume changes anything.

A checkpoint torn by a kill (an array file cut in half, an empty `_CHECKPOINT_METADATA`) fails
deep in tensorstore, whose background threads then print tracebacks at exit. So the check runs in
a child (`python -m training.runs.checkpoint_check RUN_DIR STEP...`): it reads each step, newest first,
and prints one JSON line per step (null when intact, else one line why), stopping at the first intact.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from runstore.run_folder import RunFolder

CHECK_TIMEOUT_S = 300


def damage(run_dir: str | Path, step: int) -> str | None:
    """Why checkpoint `step` of a run cannot be restored, in one line; None when all of it reads back.

    Reads the whole checkpoint (a few MB for these models) as saved, without the run's state to lay
    it out: a file torn in half, an empty `_CHECKPOINT_METADATA` or a missing array all show here,
    before resume changes anything.
    """
    folder = RunFolder(Path(run_dir).absolute()).checkpoints / str(step)
    for name in ("_CHECKPOINT_METADATA", "meta/metadata"):
        path = folder / name
        try:
            json.loads(path.read_bytes()) if path.exists() else None
        except (OSError, ValueError):
            return f"{path} is not valid JSON (empty or torn)"
    import orbax.checkpoint as ocp

    options = ocp.CheckpointManagerOptions(read_only=True)
    manager = ocp.CheckpointManager(folder.parent, options=options, item_names=("arrays", "meta"))
    try:
        manager.restore(step, args=ocp.args.Composite(arrays=ocp.args.StandardRestore(), meta=ocp.args.JsonRestore()))
    except Exception as exc:  # noqa: BLE001 - tensorstore, Orbax and JSON errors alike mean "cannot be restored"
        why = (str(exc).splitlines() or [type(exc).__name__])[0]
        return f"{folder} cannot be read ({why[:160]})"
    finally:
        manager.close()
    return None


def first_intact(run_dir: Path, steps: Sequence[int]) -> tuple[int | None, list[str]]:
    """The first of `steps` (try newest first) whose checkpoint reads back whole, and why each before it does not."""
    if not steps:
        return None, []
    cmd = [sys.executable, "-m", "training.runs.checkpoint_check", str(Path(run_dir).absolute()), *map(str, steps)]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=CHECK_TIMEOUT_S, check=False)
        found = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    except (OSError, subprocess.TimeoutExpired, ValueError) as exc:
        return None, [f"the checkpoint check could not run ({type(exc).__name__}: {exc})"]
    reasons = [f["damage"] for f in found if f["damage"]]
    intact = next((f["step"] for f in found if not f["damage"]), None)
    if intact is None and not found:
        reasons.append(f"the checkpoint check failed: {(done.stderr.strip().splitlines() or ['no output'])[-1]}")
    return intact, reasons


def main(argv: Sequence[str]) -> int:
    """Print {"step", "damage"} for each step given, stopping after the first intact one."""
    import orbax.checkpoint  # noqa: F401 - imported before logging is quieted

    for name in ("absl", "asyncio"):
        logging.getLogger(name).setLevel(logging.CRITICAL)
    run_dir, steps = Path(argv[0]), [int(s) for s in argv[1:]]
    for step in steps:
        why = damage(run_dir, step)
        print(json.dumps({"step": step, "damage": why}), flush=True)
        if why is None:
            break
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
