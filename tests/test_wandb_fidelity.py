"""What a script logs reaches every store as W&B itself stores it: the same script run with real `import wandb`
(offline) and with `import jaxdash as wandb`, as real subprocesses, W&B's run read back with its own reader
(`wandb leet inspect`), ours from the run folder (metrics.jsonl, artifacts/, summary.json), TensorBoard's own
reader and the W&B copy our writer process wrote.

* every numeric dtype of JAX and NumPy (bfloat16, float8, float16, ints, bools; 0-d arrays and NumPy scalars);
* arrays as W&B keeps them: at most 32 elements a list (nested ones nested), more a 32-bin histogram;
* W&B's project ("uncategorized") for a run that names none;
* `wandb.plot.*` as W&B's own custom charts in the W&B copy (`_wandb.visualize` specs and their tables).

One script logs all of it; W&B's run and ours run side by side once per module.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from tensorboard.backend.event_processing import event_accumulator as ea

from components.series import progress_text
from runstore import media_store, run_folder, run_store, wandb_reads
from runstore.run_folder import RunFolder
from tests import wandb_leet
from tests.client_scripts import only_run, rows, script_env, wandb_run_record, write

SCRIPT = """
import json, os, sys
import numpy as np, ml_dtypes, jax.numpy as jnp
if sys.argv[-1] == "wandb":
    import wandb
else:
    import jaxdash as wandb

FLOATS = ["bfloat16", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float16", "float32"]
INTS = ["int8", "int16", "int32", "uint8", "uint16", "uint32", "int4", "uint4"]
run = wandb.init(dir=os.getcwd())  # no project, no $WANDB_PROJECT
print("OUT", json.dumps({"project": run.project}))
for step in range(2):
    row = {"py/bool": step == 0, "py/int": 3 + step, "py/float": 0.1 * step}
    for name in FLOATS + INTS + ["bool"]:
        dt = np.dtype(getattr(ml_dtypes, name, name))
        value = (step == 1) if name == "bool" else (0.1 + step if name in FLOATS else 3 + step)
        row[f"np/{name}"] = np.asarray(value, dtype=dt)       # a 0-d NumPy array
        row[f"scalar/{name}"] = np.asarray(value, dtype=dt)[()]  # a NumPy scalar
        if name not in ("float8_e4m3fnuz", "int4", "uint4"):
            row[f"jax/{name}"] = jnp.asarray(value, dtype=dt)    # a 0-d JAX array
    row.update({
        "arr/one": np.array([7.0 + step]),                      # one element: a number
        "arr/pair": np.array([3, 4 + step]),                    # a list
        "arr/bf16": jnp.array([0.1, 1.5 + step], dtype=jnp.bfloat16),
        "arr/flags": np.array([True, step == 1]),
        "arr/grid": np.arange(6).reshape(2, 3) + step,          # nested lists
        "arr/n32": np.arange(32) * (step + 1),
        "arr/n33": np.arange(33) * (step + 1),                  # a histogram
        "arr/j40": jnp.linspace(0, 1 + step, 40, dtype=jnp.bfloat16),
        "arr/pylist": [1, 2.5, step],
        "arr/empty": np.zeros(0),
    })
    for n in (10, 32, 33, 1000):  # float32 and bfloat16 edges are binned in their own dtype, as W&B's
        wave = np.sin(np.arange(n) * 0.37 + step) * 3 + step
        for dt in ("float32", "bfloat16"):
            row[f"arr/np_{dt}_{n}"] = wave.astype(getattr(ml_dtypes, dt, dt))
            row[f"arr/jax_{dt}_{n}"] = jnp.asarray(wave, dtype=getattr(jnp, dt))
    run.log(row)

xy = wandb.Table(data=[[x, x * x] for x in range(5)], columns=["x", "y"])
run.log({"chart/line": wandb.plot.line(xy, "x", "y", title="y = x^2")})
run.log({"chart/scatter": wandb.plot.scatter(xy, "x", "y", title="points")})
bars = wandb.Table(data=[["a", 1], ["b", 2]], columns=["label", "value"])
run.log({"chart/bar": wandb.plot.bar(bars, "label", "value", title="bars")})
values = wandb.Table(data=[[v] for v in [1, 2, 2, 3]], columns=["v"])
run.log({"chart/hist": wandb.plot.histogram(values, "v", title="h")})
run.log({"chart/series": wandb.plot.line_series(xs=[0, 1, 2], ys=[[1, 2, 3], [3, 2, 1]], keys=["a", "b"],
                                                title="s", xname="t")})
y_true, probs = [0, 1, 1, 0], [[0.9, 0.1], [0.2, 0.8], [0.6, 0.4], [0.7, 0.3]]
run.log({"chart/cm": wandb.plot.confusion_matrix(y_true=y_true, preds=[0, 1, 0, 0], class_names=["n", "p"])})
run.log({"chart/custom": wandb.plot_table("wandb/line/v0", xy, {"x": "x", "y": "y"}, {"title": "mine"})})
try:
    import sklearn  # wandb.plot.pr_curve / roc_curve need scikit-learn
    pr, roc = wandb.plot.pr_curve(y_true, probs, labels=["n", "p"]), wandb.plot.roc_curve(y_true, probs, labels=["n", "p"])
except ImportError:  # jaxdash computes them with NumPy; W&B's charts without their data: wandb/plot/pr_curve.py's spec
    empty = lambda *cols: wandb.Table(columns=list(cols))
    pr = wandb.plot_table("wandb/area-under-curve/v0", empty("class", "precision", "recall"),
                          {"x": "recall", "y": "precision", "class": "class"},
                          {"title": "Precision-Recall Curve", "x-axis-title": "Recall", "y-axis-title": "Precision"})
    roc = wandb.plot_table("wandb/area-under-curve/v0", empty("class", "fpr", "tpr"),
                           {"x": "fpr", "y": "tpr", "class": "class"},
                           {"title": "ROC Curve", "x-axis-title": "False positive rate",
                            "y-axis-title": "True positive rate"})
run.log({"chart/pr": pr, "chart/roc": roc})
run.finish()
"""
DTYPE_KEYS = ("py/", "np/", "scalar/", "jax/")


def _run_both(tmp_path: Path, code: str) -> dict[str, Any]:
    """`code` run by real wandb and by jaxdash, side by side: W&B's offline run folder ("theirs"), our run folder
    ("ours") and what each printed on its "OUT " line ("their_out", "our_out")."""

    def one(which: str) -> subprocess.CompletedProcess:
        where = tmp_path / which
        where.mkdir()
        path = write(where, code)
        env = script_env(where / "runs")
        return subprocess.run([sys.executable, str(path), which], cwd=where, env=env, capture_output=True,
                              text=True, timeout=300)  # fmt: skip

    with ThreadPoolExecutor(2) as pool:
        theirs, ours = pool.map(one, ["wandb", "jaxdash"])
    assert theirs.returncode == 0, theirs.stderr[-3000:]
    assert ours.returncode == 0, ours.stderr[-3000:]
    (their_dir,) = (tmp_path / "wandb" / "wandb").glob("offline-run-*")
    printed = [
        json.loads(next(line[4:] for line in p.stdout.splitlines() if line.startswith("OUT "))) for p in (theirs, ours)
    ]
    return {"theirs": their_dir, "ours": only_run(tmp_path / "jaxdash" / "runs"), "their_out": printed[0],
            "our_out": printed[1]}  # fmt: skip


def history(wandb_dir: Path) -> dict[int, dict[str, Any]]:
    """A closed W&B run's history rows by step, less W&B's own keys."""
    out = {}
    for r in wandb_leet.finished_records(wandb_dir):
        if r.get("type") == "history":
            item = r["history"]["item"]
            out[item["_step"]] = folded({k: v for k, v in item.items() if not k.startswith("_")})
    return out


def folded(row: dict[str, Any]) -> dict[str, Any]:
    """W&B's reader prints a history row's media flat ("w._type", "w.bins"): each as the one dict it was logged as."""
    for media in [k[: -len("._type")] for k in row if k.endswith("._type")]:
        parts = {k: row.pop(k) for k in [k for k in row if k.startswith(f"{media}.")]}
        row[media] = {k[len(media) + 1 :]: v for k, v in parts.items()}
    return row


def summary(wandb_dir: Path) -> dict[str, Any]:
    """A closed W&B run's summary, less W&B's own keys."""
    found = wandb_leet.finished_summary(wandb_dir)["summary"]
    return {k: v for k, v in found.items() if not k.startswith("_")}


def exact(a: Any, b: Any) -> bool:
    """Equal as JSON values: a bool only equals a bool, numbers within 1e-9 (W&B's reader prints 3.0 as 3)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(exact(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(exact(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def differences(want: dict[str, Any], got: dict[str, Any], where: str) -> list[str]:
    """`key: ours (W&B: theirs)` for each key whose value differs or is missing."""
    out = []
    for key in sorted(set(want) | set(got)):
        if not exact(want.get(key, "<missing>"), got.get(key, "<missing>")):
            out.append(f"{where}[{key}]: {got.get(key, '<missing>')!r} (W&B: {want.get(key, '<missing>')!r})")
    return out


def copy_dir(run_dir: Path) -> Path:
    """The W&B copy our writer process wrote for `run_dir`."""
    return Path(RunFolder(run_dir).status()["wandb"]["dir"])


def store_rows(run_dir: Path) -> dict[int, dict[str, Any]]:
    """Our run folder's rows by step: metrics.jsonl's scalars, artifacts/values' lists and the histograms' bins
    in W&B's shape ({"_type": "histogram", "bins": edges, "values": counts})."""
    out: dict[int, dict[str, Any]] = {}
    for r in rows(run_dir):
        out.setdefault(r.pop("step"), {}).update(r)
    for tag, lines in media_store.values(run_dir).items():
        for step, value in lines:
            out.setdefault(step, {})[tag] = value
    for tag, lines in media_store.histograms(run_dir).items():
        for step, counts, edges in lines:
            out.setdefault(step, {})[tag] = {"_type": "histogram", "bins": edges, "values": counts}
    return out


def as_chart_number(value: Any) -> Any:
    """What the run folder's metrics.jsonl and TensorBoard chart for a W&B value: a bool as 1.0/0.0."""
    return float(value) if isinstance(value, bool) else value


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """SCRIPT run once by W&B and once by jaxdash (each test reads its own keys of it)."""
    return _run_both(tmp_path_factory.mktemp("fidelity"), SCRIPT)


def _keys(row: dict[str, Any], prefixes: tuple[str, ...]) -> dict[str, Any]:
    return {k: v for k, v in row.items() if k.startswith(prefixes)}


def test_every_numeric_dtype_is_stored_as_wandb_stores_it(runs: dict[str, Any]) -> None:
    """bfloat16, float8, float16/32, (u)int8-32, int4 and bools, as 0-d NumPy and JAX arrays and NumPy scalars, and
    Python bools: W&B's value in every row of metrics.jsonl (a bool charted as 1.0), TensorBoard, the W&B copy
    (true/false kept) and the summary."""
    their_dir, run_dir = runs["theirs"], runs["ours"]
    want = {step: _keys(row, DTYPE_KEYS) for step, row in history(their_dir).items() if _keys(row, DTYPE_KEYS)}
    assert sorted(want) == [0, 1] and len(want[0]) == 3 + 6 * 3 + 9 * 3 - 3  # every key W&B kept
    assert want[0]["jax/bfloat16"] == pytest.approx(0.10009765625) and want[1]["np/bool"] is True
    found = []
    ours, copy = store_rows(run_dir), history(copy_dir(run_dir))
    for step, row in want.items():
        chart = {k: as_chart_number(v) for k, v in row.items()}
        found += differences(chart, _keys(ours.get(step, {}), DTYPE_KEYS), f"run folder {step}")
        found += differences(row, _keys(copy.get(step, {}), DTYPE_KEYS), f"W&B copy {step}")
    theirs = _keys(summary(their_dir), DTYPE_KEYS)
    found += differences(
        theirs, _keys(run_store.read_json(run_dir / run_folder.SUMMARY), DTYPE_KEYS), run_folder.SUMMARY
    )
    found += differences(theirs, _keys(summary(copy_dir(run_dir)), DTYPE_KEYS), "W&B copy's summary")
    acc = ea.EventAccumulator(RunFolder(run_dir).status()["tensorboard"]["logdir"], size_guidance={ea.SCALARS: 0})
    acc.Reload()
    board: dict[int, dict[str, float]] = {}
    for tag in acc.Tags()["scalars"]:
        for event in acc.Scalars(tag):
            board.setdefault(event.step, {})[tag] = event.value
    for step, row in want.items():  # TensorBoard keeps float32
        for key, value in row.items():
            got = board.get(step, {}).get(key)
            if got is None or not math.isclose(got, as_chart_number(value), rel_tol=1e-6):
                found.append(f"TensorBoard {step}[{key}]: {got!r} (W&B: {value!r})")
    assert not found, "\n".join(found)


def test_arrays_are_lists_up_to_32_elements_and_histograms_above(runs: dict[str, Any]) -> None:
    """One element: a number; 0-32 elements (bfloat16, bools, nested, a Python list, an empty array): the list W&B
    keeps; 33 and more: W&B's 32-bin histogram, binned in the array's own dtype (float32 and bfloat16 edges, NumPy
    and JAX arrays of 10, 32, 33 and 1,000 elements). In the run folder, the W&B copy and the summary."""
    their_dir, run_dir = runs["theirs"], runs["ours"]
    want = {step: _keys(row, ("arr/",)) for step, row in history(their_dir).items() if _keys(row, ("arr/",))}
    assert want[0]["arr/pair"] == [3, 4] and want[0]["arr/grid"] == [[0, 1, 2], [3, 4, 5]]
    assert want[0]["arr/empty"] == [] and want[1]["arr/one"] == 8 and want[1]["arr/flags"] == [True, True]
    assert want[0]["arr/n33"]["_type"] == "histogram" and len(want[0]["arr/j40"]["values"]) == 32
    assert len(want[1]["arr/jax_bfloat16_32"]) == 32 and want[1]["arr/np_float32_1000"]["_type"] == "histogram"
    assert want[1]["arr/np_bfloat16_33"]["bins"][3] == -1.4453125  # a bfloat16 edge (float64's: -1.44189453125)
    found = []
    ours, copy = store_rows(run_dir), history(copy_dir(run_dir))
    for step, row in want.items():
        found += differences(row, _keys(ours.get(step, {}), ("arr/",)), f"run folder {step}")
        found += differences(row, _keys(copy.get(step, {}), ("arr/",)), f"W&B copy {step}")
    theirs = _keys(summary(their_dir), ("arr/",))
    kept = run_store.read_json(run_dir / run_folder.SUMMARY)
    found += differences(theirs, _keys(kept, ("arr/",)), run_folder.SUMMARY)
    assert wandb_reads.summary_text(kept["arr/n33"]) == "histogram of 33 values, 0 to 64"  # Run detail's Summary
    found += differences(theirs, _keys(summary(copy_dir(run_dir)), ("arr/",)), "W&B copy's summary")
    assert not found, "\n".join(found)


def test_a_run_without_a_project_is_in_wandbs_default_project(runs: dict[str, Any]) -> None:
    """No `project=` and no $WANDB_PROJECT: W&B's "uncategorized", in `run.project`, the run folder and the copy."""
    project = wandb_run_record(runs["theirs"])["project"]
    assert project == "uncategorized" == runs["their_out"]["project"]
    assert runs["our_out"]["project"] == project
    assert run_store.read_run(runs["ours"]).task == project  # config.json's project (the page's project column)
    assert wandb_run_record(copy_dir(runs["ours"]))["project"] == project


def charts(wandb_dir: Path) -> dict[str, Any]:
    """A W&B run's custom charts: each `_wandb.visualize.<key>` config entry, and the table its chart reads (the
    history row's table record and the table file's columns and data)."""
    records = wandb_leet.finished_records(wandb_dir)
    specs = {}
    for r in records:
        if r.get("type") == "config":
            specs.update({k.split(".", 2)[2]: v for k, v in r["config"].get("update", {}).items()
                          if k.startswith("_wandb.visualize.")})  # fmt: skip
    tables = {}
    for step, row in history(wandb_dir).items():
        for key, value in row.items():
            if isinstance(value, dict) and value.get("_type") == "table-file":
                doc = json.loads((wandb_dir / "files" / value["path"]).read_text())
                tables[key] = {"step": step, "ncols": value["ncols"], "nrows": value["nrows"],
                               "columns": doc["columns"], "data": doc["data"]}  # fmt: skip
    return {"specs": specs, "tables": tables}


def test_wandb_plots_are_wandbs_own_charts_in_the_copy(runs: dict[str, Any]) -> None:
    """Every `wandb.plot.*` and `wandb.plot_table` in the W&B copy as W&B writes it: the config's
    `_wandb.visualize.<key>` (panel type, Vega preset, field and string settings, the table it reads) and
    "<key>_table" in the history row of its step (columns and data; PR and ROC data only where scikit-learn lets
    W&B compute them), no plotly figure of ours under the key."""
    theirs, copy = charts(runs["theirs"]), charts(copy_dir(runs["ours"]))
    assert len(theirs["specs"]) == 9 and theirs["specs"]["chart/line"]["panel_type"] == "Vega2"
    assert copy["specs"] == theirs["specs"], differences(theirs["specs"], copy["specs"], "visualize")
    computed = ("chart/pr_table", "chart/roc_table")
    sklearn = any(theirs["tables"][k]["nrows"] for k in computed)
    for key, want in theirs["tables"].items():
        got = copy["tables"].get(key, {})
        if key in computed and not sklearn:
            want, got = {"columns": want["columns"]}, {"columns": got.get("columns")}
        assert exact(want, got), f"{key}: {got} (W&B: {want})"
    assert copy["tables"].keys() == theirs["tables"].keys()
    their_rows, copy_rows = history(runs["theirs"]), history(copy_dir(runs["ours"]))
    for step, row in their_rows.items():  # W&B's rows hold the tables alone: no figure under the chart's key
        assert _keys(copy_rows.get(step, {}), ("chart/",)).keys() == _keys(row, ("chart/",)).keys(), step


MEDIA_ONLY = """
import os, sys
import numpy as np
if sys.argv[-1] == "wandb":
    import wandb
else:
    import jaxdash as wandb

run = wandb.init(project="media-only", dir=os.getcwd())
for step in range(3):
    run.log({"frame": wandb.Image(np.full((8, 8, 3), 40 * step, dtype=np.uint8))}, step=step)
run.finish()
print("OUT {}")
"""


def test_a_run_of_media_alone_is_at_its_last_step_as_in_wandb(tmp_path: Path) -> None:
    """A run that logged images at steps 0-2 and no scalar is at step 2 (W&B's `_step`), in status.json and the
    page's progress line, not at step 0."""
    both = _run_both(tmp_path, MEDIA_ONLY)
    theirs = wandb_leet.finished_summary(both["theirs"])["summary"]["_step"]
    status = RunFolder(both["ours"]).status()
    assert (theirs, status["step"]) == (2, 2)
    assert "step 2" in progress_text(status)
