"""tensorboardX's and torch's `add_hparams` side run, folded into the run it describes.

`writer.add_hparams(hparams, metrics)` writes a run of its own: a subfolder of the writer's folder named by
`str(time.time())` ("1717171717.123") holding the hparams plugin's records and one point of each metric.
TensorBoard's HParams tab shows it as that run's session; drawn as a run it would be charts of one point.
The mirror (runstore/tb_logdir.py) folds it into its parent run instead: its hparams go into the parent's
config.json (runstore/tb_media.py writes them), its metric values into the parent's summary (status.json
"final", which the Runs table and Run detail show), and it is not listed as a run of its own. A side run given
its own name (`name=`, `run_name=`) cannot be told from a run by its name and stays a run, as TensorBoard lists it.
No JAX and no Streamlit here.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from runstore import run_store, tb_reads
from runstore.run_folder import RunFolder

SIDE_RUN = re.compile(r"\d{9,11}\.\d+")  # add_hparams' default run name: str(time.time())


def is_side_run(folder: Path, root: Path) -> bool:
    """True for an add_hparams side run's folder (named by a timestamp, below the logdir's top)."""
    return Path(folder) != Path(root) and SIDE_RUN.fullmatch(Path(folder).name) is not None


def summary(files: dict[Path, tb_reads.EventFile], side: list[Path]) -> tuple[dict[str, float], list[str]]:
    """The side runs' new metric values (the last point of each tag) and their files' damage; a file deleted
    since it was listed is dropped from `files`."""
    values: dict[str, float] = {}
    damage: list[str] = []
    for path in side:
        entry = files.get(path)
        new = entry.collect() if entry is not None else []
        if new is None:
            files.pop(path, None)
            continue
        for _, _, tagged in sorted(new, key=lambda e: (e[1], e[0])):
            values.update(tagged)
        if entry is not None and entry.damage:
            damage.append(entry.damage)
    return values, damage


def write_summary(mirror: Path, values: dict[str, Any]) -> None:
    """The side runs' metric values into the mirror's status.json "final" (the run's summary), kept across syncs."""
    if not values:
        return
    doc = RunFolder(mirror).raw_status({}) or {}
    if not isinstance(doc, dict):
        doc = {}
    final = {**(doc.get("final") if isinstance(doc.get("final"), dict) else {}), **values}
    if final != doc.get("final"):
        run_store.atomic_write_json(RunFolder(mirror).status_path, {**doc, "final": final})
