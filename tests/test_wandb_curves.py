"""`wandb.plot.pr_curve` and `wandb.plot.roc_curve` hold W&B's own numbers: the same calls run with real `import wandb`
(offline, which computes them with scikit-learn) and with `import jaxdash as wandb` (NumPy alone), and each chart's
table in our W&B copy ("<key>_table": columns and rows) equals W&B's, as its custom-chart spec does.

Inputs: binary and three-class labels, integer and string classes, with and without `labels`, `classes_to_plot`,
tied scores, a perfect and a useless classifier, `interp_size` and titles.

Marked `slow`, and run only where scikit-learn can be imported (W&B needs it for these two charts; it is no
dependency of this project). Without it installed, give its folder:

    .venv/bin/pip install --no-deps --target /tmp/sk scikit-learn joblib threadpoolctl cloudpickle
    JAXDASH_SKLEARN_PATH=/tmp/sk .venv/bin/python -m pytest -m slow tests/test_wandb_curves.py
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from tests.client_scripts import ROOT, only_run, script_env, write
from tests.test_wandb_fidelity import charts, copy_dir, exact

pytestmark = pytest.mark.slow

SCRIPT = """
import os, sys
import numpy as np
if sys.argv[-1] == "wandb":
    import wandb
else:
    import jaxdash as wandb

rng = np.random.default_rng(7)
y3 = rng.integers(0, 3, 60)
p3 = rng.dirichlet([1, 1, 1], 60)
p3[np.arange(60), y3] += 0.3 * rng.random(60)         # better than chance, not perfect
p3 /= p3.sum(axis=1, keepdims=True)
tied = np.round(p3, 1)                                 # many equal scores
yb = rng.integers(0, 2, 40)
pb = np.clip(0.5 * yb + 0.6 * rng.random(40) - 0.05, 0, 1)
pb2 = np.stack([1 - pb, pb], axis=1)
names = np.array(["cat", "dog", "owl"])
CASES = {
    "binary": dict(y_true=yb, y_probas=pb2, labels=["no", "yes"]),
    "binary_nolabels": dict(y_true=yb.tolist(), y_probas=pb2.tolist()),
    "three": dict(y_true=y3, y_probas=p3, labels=["cat", "dog", "owl"]),
    "three_some": dict(y_true=y3, y_probas=p3, labels=["cat", "dog", "owl"], classes_to_plot=[0, 2]),
    "tied": dict(y_true=y3, y_probas=tied),
    "strings": dict(y_true=names[y3], y_probas=p3),
    "perfect": dict(y_true=yb, y_probas=np.stack([1.0 - yb, yb.astype(float)], axis=1)),
    "useless": dict(y_true=yb, y_probas=np.full((40, 2), 0.5)),
}
run = wandb.init(project="curves", dir=os.getcwd())
for name, kw in CASES.items():
    run.log({f"pr/{name}": wandb.plot.pr_curve(**kw), f"roc/{name}": wandb.plot.roc_curve(**kw)})
run.log({"pr/grid11": wandb.plot.pr_curve(yb, pb2, interp_size=11, title="eleven"),
         "roc/titled": wandb.plot.roc_curve(yb, pb2, title="mine")})
run.finish()
"""


def _sklearn_path() -> str:
    """Where the scripts find scikit-learn ($JAXDASH_SKLEARN_PATH, else this interpreter's); skips without it."""
    given = os.environ.get("JAXDASH_SKLEARN_PATH")
    if given and (Path(given) / "sklearn").is_dir():
        return given
    spec = importlib.util.find_spec("sklearn")
    if spec is None or spec.origin is None:
        pytest.skip("scikit-learn is not installed (W&B computes these charts with it): see this file's docstring")
    return str(Path(spec.origin).parent.parent)


def _run(where: Path, which: str, sklearn: str) -> subprocess.CompletedProcess:
    where.mkdir()
    env = script_env(where / "runs", PYTHONPATH=os.pathsep.join([str(ROOT), sklearn]))
    return subprocess.run([sys.executable, str(write(where, SCRIPT)), which], cwd=where, env=env,
                          capture_output=True, text=True, timeout=300)  # fmt: skip


def test_pr_and_roc_tables_equal_wandbs(tmp_path: Path) -> None:
    """Each curve's table in our W&B copy (columns, every row) and its chart spec equal those real wandb wrote."""
    sklearn = _sklearn_path()
    with ThreadPoolExecutor(2) as pool:
        theirs, ours = pool.map(lambda w: _run(tmp_path / w, w, sklearn), ["wandb", "jaxdash"])
    assert theirs.returncode == 0, theirs.stderr[-3000:]
    assert ours.returncode == 0, ours.stderr[-3000:]
    (their_dir,) = (tmp_path / "wandb" / "wandb").glob("offline-run-*")
    want, got = charts(their_dir), charts(copy_dir(only_run(tmp_path / "jaxdash" / "runs")))
    assert len(want["tables"]) == 18 and want["tables"]["pr/three_table"]["nrows"] == 63  # W&B computed them all
    wrong = [_diff(key, table, got["tables"].get(key)) for key, table in sorted(want["tables"].items())]
    wrong = [w for w in wrong if w]
    assert not wrong, "\n".join(wrong)
    assert got["specs"] == want["specs"]


def _diff(key: str, want: dict[str, Any], got: dict[str, Any] | None) -> str | None:
    """None if `got` equals `want` (step aside), else the first differing row, both ways."""
    if got is None:
        return f"{key}: missing"
    if want["columns"] != got["columns"]:
        return f"{key}: columns {got['columns']} (W&B: {want['columns']})"
    for i, (a, b) in enumerate(zip(want["data"], got["data"], strict=False)):
        if not exact(a, b):
            return f"{key}: row {i} {b} (W&B: {a}); {len(got['data'])} rows (W&B: {len(want['data'])})"
    if len(want["data"]) != len(got["data"]):
        return f"{key}: {len(got['data'])} rows (W&B: {len(want['data'])})"
    return None
