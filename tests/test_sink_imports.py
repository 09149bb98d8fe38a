"""What a client run's writer process (jaxdash/sink.py) loads: pandas only for a table or a figure.

The training process imports pandas at W&B's init (runwriters/wandb/run.py, so a first table is not
a stall mid-run); the sink is a process of its own at idle priority, where that import would only cost
~0.4 CPU s and ~60 MB for every run that logs no table or figure.
"""

from __future__ import annotations

import re
from pathlib import Path

from runstore.run_folder import RunFolder
from tests import client_scripts

SCALARS = """
import jaxdash
run = jaxdash.init(project="imports")
for step in range(3):
    run.log({"train/loss": 1.0 / (step + 1)})
run.finish()
"""
TABLE = """
import jaxdash
run = jaxdash.init(project="imports")
run.log({"train/loss": 1.0})
run.log({"preds": jaxdash.Table(columns=["x", "y"], data=[[1, 2.0], [3, 4.0]])})
run.finish()
"""
PANDAS = re.compile(r"^import time:.*\|\s*pandas$", re.MULTILINE)  # python -X importtime's line for pandas


def test_a_run_of_scalars_never_imports_pandas_and_its_rows_reach_wandb(tmp_path: Path) -> None:
    out, root = client_scripts.run(tmp_path, SCALARS, PYTHONPROFILEIMPORTTIME="1")  # both processes' imports
    assert out.returncode == 0, out.stderr[-2000:]
    assert "jaxdash.sink" in out.stderr  # the sink's imports are in this stderr too
    assert not PANDAS.search(out.stderr)
    status = RunFolder(client_scripts.only_run(root)).status()
    history = client_scripts.wandb_history(Path(status["wandb"]["dir"]))
    assert [h["train/loss"] for h in history] == [1.0, 0.5, 1.0 / 3]


def test_a_table_imports_pandas_in_the_sink_and_reaches_wandb(tmp_path: Path) -> None:
    out, root = client_scripts.run(tmp_path, TABLE, PYTHONPROFILEIMPORTTIME="1")
    assert out.returncode == 0, out.stderr[-2000:]
    assert PANDAS.search(out.stderr)
    status = RunFolder(client_scripts.only_run(root)).status()
    records = client_scripts.wandb_records(Path(status["wandb"]["dir"]))
    assert any("preds" in str(r.get("history", "")) for r in records)
