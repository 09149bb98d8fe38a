"""Dashboard pages driven headlessly with streamlit.testing.v1.AppTest.

History/detail tests write run directories by hand (the run store is the contract);
the launch and stop tests start real training processes through the page.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest
from streamlit.testing.v1.element_tree import Error

from dashboard import state as dashboard_state
from dashboard.processes import launcher, tensorboard_server
from dashboard.processes import warm_workers as worker
from runstore import launch_files, run_store, tags
from tests.chart_elements import charts, trace_lengths, trace_values
from training import cli
from training.config import parse_config
from training.tasks import load_task
from training.writers.base import Table
from training.writers.store import RunStoreWriter

APP = str(Path(__file__).resolve().parent.parent / "dashboard" / "app.py")
REG_CFG = {
    "points": 128,
    "noise": 0.5,
    "true_weight": 2.0,
    "true_bias": -1.0,
    "optimizer": "sgd",
    "lr": 0.005,
    "steps": 1000,
    "seed": 42,
    "log_every": 10,
}
MNIST_CFG = {
    "dataset": "fashion_mnist",
    "data_dir": None,
    "hidden": [128, 128],
    "optimizer": "adam",
    "lr": 0.001,
    "batch_size": 32,
    "epochs": 3,
    "seed": 0,
    "log_every": 100,
    "eval_every": 0,
    "train_limit": 20000,
    "test_limit": None,
}
PANELS = {"regression": ["fit", "loss"], "mnist": ["loss", "accuracy"]}


@pytest.fixture
def root(runs_root: Path) -> Path:
    """The app's runs root (conftest's `runs_root`, exported as JAXDASH_RUNS)."""
    return runs_root


def dirs(root: Path) -> list[Path]:
    """The folders under a runs root (not its queue.db)."""
    return [d for d in root.iterdir() if d.is_dir()]


def app(page: str | None = None, run: str | None = None, **state: object) -> AppTest:
    """The app, run once, then switched to `page` (e.g. "views/runs.py")."""
    at = AppTest.from_file(APP, default_timeout=60)
    if run:
        at.query_params["run"] = run
    for k, v in state.items():
        at.session_state[k] = v
    at.run()
    if page:
        at.switch_page(page).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def fake_run(
    root: Path,
    task: str = "regression",
    state: str = "finished",
    n: int = 50,
    name: str | None = None,
    message: str | None = None,
    pid: int | None = None,
    config: dict | None = None,
    group: str | None = None,
    member: int | None = None,
) -> Path:
    """A run directory written the way a training process writes it (a population member with `group`)."""
    name = name or f"fake-{task}-{state}"
    d = run_store.new_run_dir(root, task, name)
    cfg = {**(REG_CFG if task == "regression" else MNIST_CFG), **(config or {})}
    extra = {"group": group, "member": member} if group else {}
    run_store.write_config(d, task, cfg, name=name, task_spec=task, panels=PANELS[task], **extra)
    final = {"train/loss": 0.25} if task == "regression" else {"train/loss": 0.3, "test/acc": 0.87}
    run_store.write_status(
        d,
        **extra,
        state=state,
        pid=pid or 2**22 + 12345,
        started=time.time() - 30,
        ended=None if state == "running" else time.time(),
        step=n * 10,
        total_steps=max(1000, n * 10),
        wall_seconds=30.0,
        final=final,
        message=message,
        wandb={"mode": "offline", "url": None, "sync_command": f"wandb sync {d}/wandb/offline-run-x"},
    )
    recs = []
    for i in range(n):
        r = {"step": (i + 1) * 10, "wall": i * 0.1, "ts": time.time(), "train/loss": 1.0 / (i + 1)}
        if task == "regression":
            r.update({"regression/weight": 2 * (1 - 0.9**i), "regression/bias": -(1 - 0.9**i)})
        else:
            r["train/acc"] = 1 - 1 / (i + 2)
            if i % 10 == 9:
                r["test/acc"] = 0.8
        recs.append(r)
    run_store.append_metrics(d, recs)
    write_tables(d, task, n * 10)
    return d


def write_tables(d: Path, task: str, step: int) -> None:
    """The tables a task's summaries leave in artifacts/tables/, written by the run store's own writer."""
    writer = RunStoreWriter(d)
    if task == "regression":
        x = np.linspace(-2, 2, 128)
        ends = np.array([-2.0, 2.0])
        writer.write_tables(0, {tags.FIT_DATA: Table.from_columns(x=x, y=2 * x - 1)})
        curve = Table.from_columns(x=ends, y=1.9 * ends - 0.9, y_true=2 * ends - 1)
        writer.write_tables(step, {tags.FIT_CURVE: curve})
        return
    names = [f"class{i}" for i in range(10)]
    confusion = np.eye(10, dtype=int) * 90 + 1
    labels = np.arange(16) % 10  # every prediction "class0": 14 of 16 wrong
    writer.write_tables(
        step,
        {
            tags.CONFUSION: Table(["true", *names], [[names[i], *map(int, row)] for i, row in enumerate(confusion)]),
            tags.PREDICTIONS: Table(
                ["image", "label", "pred"], [[np.zeros((28, 28), int).tolist(), names[lab], names[0]] for lab in labels]
            ),
        },
    )


def fake_population(
    root: Path, task: str = "regression", lrs: tuple = (0.001, 0.005, 0.02), seeds: tuple = (0, 1), **kw: object
) -> list[Path]:
    """Members of one population, as `python -m training TASK --population lr=... --population seed=...` writes them."""
    group = f"20250101-000000-fake-pop-{len(list(root.iterdir())):04x}"
    combos = [(lr, seed) for lr in lrs for seed in seeds]
    return [
        fake_run(
            root,
            task,
            name=f"pop #{i} (lr={lr:g} seed={seed})",
            config={"lr": lr, "seed": seed},
            group=group,
            member=i,
            **kw,  # type: ignore[arg-type]
        )
        for i, (lr, seed) in enumerate(combos)
    ]


def wait_status(run_dir: Path, states: tuple[str, ...], timeout: float = 180.0, min_step: int = 0) -> dict:
    """Poll status.json until the run is in one of `states` (and past `min_step`)."""
    deadline = time.monotonic() + timeout
    status: dict = {}
    while time.monotonic() < deadline:
        status = run_store.read_status(run_dir)
        if status.get("state") in states and (status.get("step") or 0) >= min_step:
            return status
        time.sleep(0.3)
    log = (run_dir / "process.log").read_text(errors="replace")[-2000:] if (run_dir / "process.log").exists() else ""
    raise AssertionError(f"run never reached {states}: {status}\n{log}")


def submit_mnist_form(at: AppTest, name: str, epochs: int, dataset: str | None = None, **texts: str) -> None:
    """Fill the MNIST form (W&B off; `texts` are text fields such as train_limit) and press Start."""
    at.text_input(key="mnist_run_name").input(name)
    if dataset is not None:
        at.selectbox(key="mnist_dataset").set_value(dataset)
    for field, value in texts.items():
        at.text_input(key=f"mnist_{field}").input(value)
    at.number_input(key="mnist_epochs").set_value(epochs)
    at.selectbox(key="mnist_wandb").set_value("disabled")
    at.form_submit_button[0].click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]


def test_tensorboard_starts_and_answers(tmp_path: Path) -> None:
    tb = tensorboard_server.start_tensorboard(tmp_path, wait_s=60)
    try:
        with urllib.request.urlopen(tb.url, timeout=10) as r:
            assert r.status == 200
        assert tb.url.startswith("http://127.0.0.1:")
    finally:
        tb.close()
    tb.proc.wait(10)
    assert not tb.alive()


# -- launch form -----------------------------------------------------------------------------------


def errors_under(at: AppTest, key: str, up: int = 0) -> list[str]:
    """The error messages drawn after widget `key` in its own column (`up` levels further out: in that block).

    A form field's messages are drawn right under it in its column; the population lists' one under
    their row of columns (up=2: column, row, then the block holding the row).
    """

    def path_to(block: Any) -> list[tuple[Any, int]] | None:
        for i, child in enumerate(block.children.values()):
            if getattr(child, "key", None) == key:
                return [(block, i)]
            found = path_to(child) if hasattr(child, "children") else None
            if found:
                return [*found, (block, i)]
        return None

    path = path_to(at.main)
    assert path is not None, f"no widget {key}"
    block, index = path[up]
    return [c.value for c in list(block.children.values())[index + 1 :] if isinstance(c, Error)]


def test_bad_lr_shows_message_under_the_field_and_launches_nothing(root: Path) -> None:
    at = app()
    steps = at.number_input(key="regression_steps")
    assert (steps.min, steps.max) == (1, 100_000_000)  # the widget itself refuses 0 steps (bounds from metadata)
    assert at.number_input(key="regression_lr").min == 0.0
    at.number_input(key="regression_lr").set_value(0.0)  # in the widget's bounds, but the rule is lr > 0
    at.form_submit_button[0].click().run()
    assert not at.exception
    assert errors_under(at, "regression_lr") == ["Learning rate must be > 0 (got 0)."]
    assert errors_under(at, "regression_steps") == []
    assert list(root.iterdir()) == []  # nothing launched


def test_mnist_form_reports_every_bad_field(root: Path) -> None:
    at = app()
    at.segmented_control(key="task").set_value("mnist").run()
    at.text_input(key="mnist_hidden").input("abc")
    at.number_input(key="mnist_lr").set_value(0.0)
    at.number_input(key="mnist_batch_size").set_value(100_000)
    at.text_input(key="mnist_test_limit").input("0")  # an advanced field: its expander opens to show the message
    at.form_submit_button[0].click().run()
    assert errors_under(at, "mnist_hidden") == ["Hidden layers must be whole numbers separated by commas (got 'abc')."]
    assert errors_under(at, "mnist_lr") == ["Learning rate must be > 0 (got 0)."]
    assert errors_under(at, "mnist_test_limit") == ["Test examples must be >= 1 (got 0)."]
    assert list(root.iterdir()) == []
    at.text_input(key="mnist_hidden").input("64")
    at.number_input(key="mnist_lr").set_value(0.001)
    at.text_input(key="mnist_test_limit").input("")
    at.form_submit_button[0].click().run()  # a rule across fields, in the form's words
    assert errors_under(at, "mnist_batch_size") == [
        "Batch size must not exceed the 60000 training examples (got 100000)."
    ]
    assert list(root.iterdir()) == []


def test_form_has_one_widget_per_config_field_with_its_metadata(root: Path) -> None:
    at = app()
    for task in ("regression", "mnist"):
        at.segmented_control(key="task").set_value(task).run()
        infos = load_task(task).Config.__dataclass_fields__
        widgets = {w.key: w for kind in ("number_input", "text_input", "selectbox") for w in at.get(kind)}
        for name, f in infos.items():
            w = widgets[f"{task}_{name}"]
            assert w.label == f.metadata["label"] and w.help.startswith(f.metadata["help"]), name
    assert at.selectbox(key="mnist_optimizer").options == ["sgd", "adam"]
    assert [e.label for e in at.expander] == ["Advanced settings"]


def test_build_command_round_trips_through_the_cli() -> None:
    cfg = parse_config("mnist", {"dataset": "fashion_mnist", "hidden": "64,32", "train_limit": "500", "lr": "3e-4"})
    cmd = launcher.build_command("mnist", cfg, Path("/tmp/x"), "my run", "disabled")
    assert cmd[3] == "mnist"
    args = cli.task_parser("mnist", load_task("mnist")).parse_args(cmd[4:])
    fields = load_task("mnist").Config.__dataclass_fields__
    raw = {k: v for k, v in vars(args).items() if k in fields and v is not None}
    assert set(raw) == {k for k, f in fields.items() if getattr(cfg, k) is not None}  # every set field is a flag
    assert parse_config("mnist", raw) == cfg
    assert (args.run_dir, args.name, args.wandb) == (Path("/tmp/x"), "my run", "disabled")


def test_launch_real_regression_run_finishes_and_shows_up(root: Path) -> None:
    at = app()
    at.text_input(key="regression_run_name").input("apptest-reg")
    at.number_input(key="regression_steps").set_value(300)
    at.form_submit_button[0].click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    run_dirs = dirs(root)
    assert len(run_dirs) == 1 and "apptest-reg" in run_dirs[0].name
    assert at.query_params["run"] == run_dirs[0].name  # switched to the live page of this run
    status = wait_status(run_dirs[0], ("finished", "failed", "crashed", "diverged"))
    assert status["state"] == "finished", status
    runs = app("views/runs.py")
    df = runs.dataframe[0].value
    row = df[df["name"] == "apptest-reg"].iloc[0]
    assert row["status"] == "finished" and row["final train/loss"] < 1.0
    live = app("views/live.py", run=run_dirs[0].name)
    tiles = {m.label: m.value for m in live.metric}
    assert {"regression/weight", "regression/bias", "train/loss"} <= set(tiles)
    assert abs(float(tiles["regression/weight"]) - 2.0) < 0.5  # the fit converged towards the true weight
    fit = json.loads(charts(live)[0].proto.spec)["data"]
    assert [t["name"] for t in fit] == ["data", "true", "model"] and trace_lengths(charts(live)[0])[0] == 128


USER_TASK = """
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
import optax

from training.settings import setting, with_default
from training.tasks.summaries import FitSummary
from training.tasks.base import Data, StepsConfig, Task


@dataclass(frozen=True)
class TinySineConfig(StepsConfig):
    lr: float = with_default(StepsConfig, "lr", 0.02)
    steps: int = with_default(StepsConfig, "steps", 400)
    log_every: int = with_default(StepsConfig, "log_every", 20)
    width: int = setting(16, "Hidden width", "Units of the one hidden layer.", min=1, max=256)


class TinySine(Task):
    name, title = "tinysine", "Tiny sine (a user's task)"
    Config = TinySineConfig
    panels = ("fit", "loss")

    def __init__(self, cfg):
        super().__init__(cfg)
        self.tx = self.optimizer()

    def load_data(self):
        x = jnp.linspace(-3.0, 3.0, 64)
        return Data(train={"x": x, "y": jnp.sin(x)})

    def init(self, key):
        k1, k2 = jax.random.split(key)
        w = self.cfg.width
        p = {"w1": jax.random.normal(k1, (1, w)), "b1": jnp.zeros(w), "w2": jax.random.normal(k2, (w, 1)) / w**0.5}
        return {"params": p, "opt_state": self.tx.init(p)}

    def predict(self, p, x):
        return (jnp.tanh(x[:, None] @ p["w1"] + p["b1"]) @ p["w2"])[:, 0]

    def step(self, state, batch):
        mse = lambda p: jnp.mean((self.predict(p, batch["x"]) - batch["y"]) ** 2)
        loss, grads = jax.value_and_grad(mse)(state["params"])
        updates, opt_state = self.tx.update(grads, state["opt_state"], state["params"])
        return {"params": optax.apply_updates(state["params"], updates), "opt_state": opt_state}, {"loss": loss}

    def summarize(self, state, data, final):
        x, y = (np.asarray(v, np.float64) for v in jax.device_get((data.train["x"], data.train["y"])))
        pred = np.asarray(jax.device_get(self.predict(state["params"], data.train["x"])), np.float64)
        return [FitSummary(x, y, x, pred, np.sin(x))]
"""


def test_a_users_task_appears_in_the_form_starts_from_the_page_and_is_drawn(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "tinysine.py").write_text(USER_TASK)
    spec = f"{tmp_path / 'tinysine.py'}:TinySine"
    monkeypatch.setenv("JAXDASH_TASKS", spec)
    at = app()
    picker = at.segmented_control(key="task")
    assert picker.options == ["Linear regression", "MNIST / Fashion-MNIST", "Tiny sine (a user's task)"]  # titles
    picker.set_value(spec).run()
    width = at.number_input(key="tinysine_width")  # its own field, with its label and bounds
    assert (width.label, width.value, width.max) == ("Hidden width", 16, 256)
    at.text_input(key="tinysine_run_name").input("mine")
    at.number_input(key="tinysine_width").set_value(24)
    at.selectbox(key="tinysine_wandb").set_value("disabled")
    at.form_submit_button[0].click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    (run_dir,) = dirs(root)
    assert launch_files.launch_info(run_dir)["command"][3] == spec  # the CLI got the task's spec
    status = wait_status(run_dir, ("finished", "failed", "crashed", "diverged"))
    assert status["state"] == "finished", status
    doc = run_store.read_json(run_dir / "config.json")
    assert (doc["task"], doc["task_spec"], doc["panels"], doc["config"]["width"]) == (
        "tinysine",
        spec,
        ["fit", "loss"],
        24,
    )
    live = app("views/live.py", run=run_dir.name)
    fit, loss = charts(live)
    traces = json.loads(fit.proto.spec)["data"]
    assert [t["name"] for t in traces] == ["data", "true", "model"] and trace_lengths(fit) == [64, 64, 64]
    assert trace_lengths(loss) == [400 // 20 + 1]  # the step-0 loss, then one train/loss point per chunk
    assert "train/loss" in [m.label for m in live.metric]
    detail = app("views/detail.py", run=run_dir.name)
    keys = [c.key for c in charts(detail)]  # its panels, then the all-metrics and system grids
    assert [k.rsplit("_", 1)[-1] for k in keys] == ["fit", "loss", "metrics", "system"] and not detail.error


def test_cli_run_appears_in_the_table(root: Path) -> None:
    cfg = parse_config("regression", {"steps": 200})
    cmd = launcher.build_command("regression", cfg, root / "from-cli", "cli-run", "disabled")
    subprocess.run(cmd, cwd=launcher.REPO_ROOT, check=True, capture_output=True, timeout=180)
    df = app("views/runs.py").dataframe[0].value
    assert list(df["name"]) == ["cli-run"] and list(df["status"]) == ["finished"]


def test_stop_button_stops_a_real_mnist_run(root: Path) -> None:
    at = app()
    at.segmented_control(key="task").set_value("mnist").run()
    submit_mnist_form(at, "apptest-stop", epochs=30, dataset="fashion_mnist", train_limit="20000")
    (run_dir,) = dirs(root)
    wait_status(run_dir, ("running",), min_step=1)
    live = app("views/live.py", run=run_dir.name)
    live.button(key="stop_run").click().run()
    assert not live.exception
    status = wait_status(run_dir, ("stopped", "finished", "failed", "crashed"), timeout=60)
    assert status["state"] == "stopped", status
    assert status["step"] < status["total_steps"]
    live = app("views/live.py", run=run_dir.name)
    assert not live.get("button") or all(b.key != "stop_run" for b in live.button)


# -- history, compare, detail (run dirs written by hand) ------------------------------------------------


def test_runs_table_lists_runs_with_status_config_and_final_metrics(root: Path) -> None:
    fake_run(root, "regression", "finished")
    fake_run(root, "mnist", "diverged", message="Loss became nan at step 40: training diverged.")
    at = app("views/runs.py")
    df = at.dataframe[0].value
    assert set(df["name"]) == {"fake-regression-finished", "fake-mnist-diverged"}
    assert set(df["status"]) == {"finished", "diverged"}
    mnist = df[df["task"] == "mnist"].iloc[0]
    assert mnist["final test/acc"] == pytest.approx(0.87) and "fashion_mnist" in mnist["config"]


def test_compare_overlays_selected_runs_downsampled(root: Path) -> None:
    a = fake_run(root, "regression", "finished", n=30_000, name="long")
    b = fake_run(root, "regression", "stopped", n=40, name="short")
    at = app("views/runs.py", selected_ids=[a.name, b.name])
    assert not at.exception
    (chart,) = charts(at)  # the compare grid: train/loss, regression/bias, regression/weight
    lengths = trace_lengths(chart)
    assert len(lengths) == 2 * 3 and max(lengths) <= 2000 and min(lengths) == 40
    at.slider(key="cmp_smooth").set_value(0.9).run()
    assert len(trace_lengths(charts(at)[0])) == 4 * 3  # raw (faint) + smoothed per run
    assert at.get("download_button") == []  # the CSV is per run: offered for a single selection


def test_single_selection_offers_csv_and_delete_needs_confirmation(root: Path) -> None:
    d = fake_run(root, "regression", "finished", n=5)
    at = app("views/runs.py", selected_ids=[d.name])
    (download,) = at.get("download_button")
    assert download.proto.label == "Metrics CSV"
    next(b for b in at.button if b.label.startswith("Delete")).click().run()
    assert d.exists() and any("cannot be undone" in w.value for w in at.warning)
    at.button(key="confirm_yes").click().run()
    assert not at.exception and not d.exists()


def test_failed_and_crashed_runs_show_their_message_not_a_traceback(root: Path) -> None:
    d = fake_run(root, "mnist", "failed", message="Dataset 'mnist' is not available. To fix: pass --data-dir DIR.")
    at = app("views/live.py", run=d.name)
    assert [e.value for e in at.error] == ["Dataset 'mnist' is not available. To fix: pass --data-dir DIR."]
    crashed = fake_run(root, "regression", "running", pid=2**22 + 54321)  # no such process
    at = app("views/live.py", run=crashed.name)
    assert any("exited without finishing" in e.value for e in at.error)
    assert not any("Traceback" in m.value for m in at.markdown)


def test_detail_shows_sync_command_confusion_matrix_and_mistakes(root: Path) -> None:
    d = fake_run(root, "mnist", "finished")
    at = app("views/detail.py", run=d.name)
    assert any("`` wandb sync " in m.value for m in at.markdown)  # inline code: no syntax highlighter
    keys = [c.proto.id for c in charts(at)]
    assert len(keys) == 5  # loss, accuracy, confusion matrix, misclassified images, all metrics
    assert at.button(key="tb_start").label == "Start TensorBoard"


def test_live_page_reads_metrics_incrementally(root: Path) -> None:
    """A refresh reads only the appended bytes: a record changed in place (same inode, same length) after
    the first read keeps its old value on the chart, while the appended record shows."""
    d = fake_run(root, "regression", "running", n=10, pid=os.getpid())
    at = app("views/live.py", run=d.name)
    assert trace_lengths(charts(at)[1]) == [10]
    path = d / "metrics.jsonl"
    text = path.read_text()
    old = json.dumps(json.loads(text.splitlines()[5])["train/loss"])
    with path.open("r+") as f:  # rewrite step 60's loss in place: a full re-read would see 9.x
        f.seek(text.index(old, text.index('"step": 60')))
        f.write("9" + old[1:])
    run_store.append_metrics(d, [{"step": 999, "wall": 9.0, "ts": time.time(), "train/loss": 0.01}])
    at.run()
    assert trace_lengths(charts(at)[1]) == [11]
    assert max(trace_values(charts(at)[1], "y")[0]) <= 1.0


# -- warm worker -----------------------------------------------------------------------------------


@pytest.fixture
def warm_pool(monkeypatch: pytest.MonkeyPatch) -> Iterator[worker.WorkerPool]:
    """This test's own worker pool (in place of the module's), its worker ready; killed afterwards."""
    pool = worker.WorkerPool()
    monkeypatch.setattr(worker, "_POOL", pool)
    monkeypatch.delenv("JAXDASH_WARM_WORKER", raising=False)
    pool.ensure()
    assert pool.worker is not None and pool.worker.wait_ready(180), list(pool.worker.output if pool.worker else [])
    yield pool
    waiting = pool.worker
    pool.close()
    assert waiting is None or waiting.proc.poll() is not None  # an unused worker does not outlive the server


def linked_dataset(src: Path, dest: Path) -> Path:
    """A data folder holding `src`'s four IDX files (symlinks)."""
    dest.mkdir(parents=True)
    for f in src.iterdir():
        (dest / f.name).symlink_to(f)
    return dest


def test_start_goes_to_the_warm_worker_with_the_current_environment(
    root: Path, warm_pool: worker.WorkerPool, fashion_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Set after the worker started: the run only finds "mnist" if the job carried the environment over.
    monkeypatch.setenv("JAXDASH_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    linked_dataset(fashion_dir, tmp_path / "data" / "mnist")
    ready_pid = warm_pool.worker.proc.pid  # type: ignore[union-attr]
    at = app()
    at.segmented_control(key="task").set_value("mnist").run()
    assert any("MNIST: found in" in c.value and str(tmp_path / "data") in c.value for c in at.caption)
    submit_mnist_form(at, "warm", epochs=1, train_limit="512", test_limit="256")
    (run_dir,) = dirs(root)
    info = launch_files.launch_info(run_dir)
    assert info["via"] == "worker" and info["pid"] == ready_pid
    status = wait_status(run_dir, ("finished", "failed", "crashed"))
    assert status["state"] == "finished", status
    assert status["pid"] == ready_pid  # the worker became the run's process
    assert '"state": "finished"' in (run_dir / "process.log").read_text()
    deadline = time.monotonic() + 60  # a replacement starts once the run has written metrics
    while (warm_pool.worker is None or warm_pool.worker.proc.pid == ready_pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert warm_pool.worker is not None and warm_pool.worker.proc.pid != ready_pid


def test_dead_or_mismatched_worker_falls_back_to_a_cold_start(
    root: Path, warm_pool: worker.WorkerPool, monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg = parse_config("regression", {"steps": 50})
    dead = warm_pool.worker
    dead.proc.kill()  # type: ignore[union-attr]
    dead.proc.wait(10)  # type: ignore[union-attr]
    cold = launcher.launch("regression", cfg, wandb_mode="disabled")
    assert launch_files.launch_info(cold)["via"] == "cold"
    assert wait_status(cold, ("finished", "failed", "crashed"))["state"] == "finished"
    fresh = warm_pool.worker
    assert fresh is not None and fresh is not dead and fresh.wait_ready(180)
    # XLA_FLAGS is read when JAX starts, which the waiting worker already did: it cannot take this run.
    monkeypatch.setenv("XLA_FLAGS", "--xla_force_host_platform_device_count=2")
    other = launcher.launch("regression", cfg, wandb_mode="disabled")
    assert launch_files.launch_info(other)["via"] == "cold"
    assert wait_status(other, ("finished", "failed", "crashed"))["state"] == "finished"
    assert fresh.proc.wait(10) is not None  # replaced by a worker started with the new flags
    assert warm_pool.worker is not None and warm_pool.worker.env.get("XLA_FLAGS") == os.environ["XLA_FLAGS"]


def test_worker_fits_only_jobs_it_can_run_as_a_fresh_process() -> None:
    w = object.__new__(worker.Worker)
    w.env = {"JAXDASH_RUNS": "/a", "WANDB_MODE": "offline", "XLA_FLAGS": "-x"}
    assert w.fits({"JAXDASH_RUNS": "/b", "WANDB_MODE": "disabled", "XLA_FLAGS": "-x", "JAXDASH_DATA_DIR": "/d"})
    assert not w.fits({"JAXDASH_RUNS": "/a", "XLA_FLAGS": "-x"})  # WANDB_MODE would stay set in the worker
    assert not w.fits({"JAXDASH_RUNS": "/a", "WANDB_MODE": "offline", "XLA_FLAGS": "-y"})
    assert not w.fits({**w.env, "JAX_PLATFORMS": "cpu"})
    assert worker.job_env({"PATH": "/bin", "WANDB_X": "1", "XLA_FLAGS": "f", "JAXDASH_Y": "2"}) == {
        "WANDB_X": "1",
        "XLA_FLAGS": "f",
        "JAXDASH_Y": "2",
        "JAXDASH_NICE": "10",  # training below the page's priority unless the environment says otherwise
    }


# -- populations -----------------------------------------------------------------------------------


def test_population_form_shows_k_and_reports_bad_lists(root: Path) -> None:
    at = app()
    at.toggle(key="regression_pop_on").set_value(True).run()
    at.text_input(key="regression_pop_lr").input("0.001, 0.005, 0.02").run()
    at.text_input(key="regression_pop_seed").input("0,1").run()
    assert any("K = 6 runs" in c.value for c in at.caption)
    assert at.form_submit_button[0].label == "Start population (6 runs)"
    assert at.number_input(key="regression_lr").disabled and at.number_input(key="regression_seed").disabled
    at.text_input(key="regression_pop_lr").input("0.001, fast").run()
    at.form_submit_button[0].click().run()
    assert errors_under(at, "regression_pop_seed", up=2) == ["Learning rate must be a number (got 'fast')."]
    at.text_input(key="regression_pop_lr").input("0.01").run()
    at.text_input(key="regression_pop_seed").input("").run()
    at.form_submit_button[0].click().run()
    (error,) = errors_under(at, "regression_pop_seed", up=2)
    assert error.startswith("A population needs at least two values of Learning rate or Seed")
    assert list(root.iterdir()) == []


def test_start_population_from_the_page_and_watch_every_member(root: Path) -> None:
    at = app()
    at.toggle(key="regression_pop_on").set_value(True).run()
    at.text_input(key="regression_pop_lr").input("0.001, 0.005, 0.02").run()
    at.text_input(key="regression_pop_seed").input("0, 1").run()
    at.text_input(key="regression_run_name").input("pop")
    at.number_input(key="regression_steps").set_value(300)
    at.selectbox(key="regression_wandb").set_value("disabled")
    at.form_submit_button[0].click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    (launch_dir,) = [d.parent for d in root.glob("*/launch.json")]  # members may already be there (warm worker)
    assert launch_files.launch_info(launch_dir)["members"] == 6
    deadline = time.monotonic() + 180
    while len(list(root.glob("*/config.json"))) < 6 and time.monotonic() < deadline:
        time.sleep(0.3)
    members = sorted(p.parent for p in root.glob("*/config.json"))
    # The live page shows the launch until the members exist, then the first member (and with it all of them).
    assert at.query_params["run"] in {launch_dir.name, members[0].name}
    for d in members:
        assert wait_status(d, ("finished", "failed", "crashed", "diverged"))["state"] == "finished"
    live = app("views/live.py", run=launch_dir.name)  # the launch id now stands for the population
    assert any(c.value.startswith("Population `") and "6 members" in c.value for c in live.caption)
    fit, loss = charts(live)
    names = [t["name"] for t in json.loads(fit.proto.spec)["data"]]
    assert len(names) == 2 + 6 and "lr=0.02 seed=1" in names
    assert len(trace_lengths(loss)) == 6 and min(trace_lengths(loss)) == 31  # step 0, then 300 steps / 10 per chunk
    assert len(live.dataframe[0].value) == 6
    df = app("views/runs.py").dataframe[0].value
    assert len(df) == 6 and df["group"].nunique() == 1  # the launch row gave way to its members
    assert launch_dir in members and len(dirs(root)) == 6  # the launch folder is member 0's: none left behind
    assert run_store.read_json(launch_dir / "config.json")["name"] == "pop #0 (seed=0 lr=0.001)"


def test_live_shows_every_member_of_a_population(root: Path) -> None:
    reg = fake_population(root, "regression", state="running", pid=os.getpid())
    at = app("views/live.py", run=reg[3].name)
    fit, loss = charts(at)
    assert len(trace_lengths(fit)) == 2 + 6 and len(trace_lengths(loss)) == 6
    assert [b.label for b in at.button] == ["Stop all"]
    mnist = fake_population(root, "mnist", lrs=(0.001, 0.003), seeds=(0,), state="stopped")
    at = app("views/live.py", run=mnist[1].name)
    loss, acc = charts(at)
    assert [t["name"] for t in json.loads(acc.proto.spec)["data"]] == ["lr=0.001", "lr=0.003"]
    at.segmented_control(key="group_acc_split").set_value("test").run()
    assert trace_lengths(charts(at)[1]) == [5, 5]  # test accuracy: one point per evaluation
    assert list(at.dataframe[0].value["member"]) == ["lr=0.001", "lr=0.003"]


def test_runs_table_shows_groups_and_selects_a_whole_population(root: Path) -> None:
    single = fake_run(root, "regression", "finished", name="single")
    pop = fake_population(root, "regression")
    at = app("views/runs.py", selected_ids=[pop[2].name, single.name])
    df = at.dataframe[0].value
    assert df["group"].notna().sum() == 6 and df.loc[df["name"] == "single", "group"].isna().all()
    at.button(key=next(b.key for b in at.button if b.label == "Select whole population (6)")).click().run()
    assert not at.exception
    assert set(at.session_state["selected_ids"]) == {d.name for d in pop} | {single.name}
    assert len(trace_lengths(charts(at)[0])) == 7 * 3  # compare grid: every member plus the single run


# -- resume ------------------------------------------------------------------------------------------


def test_resume_button_only_for_stopped_or_crashed_runs_with_a_checkpoint(root: Path) -> None:
    stopped = fake_run(root, "regression", "stopped", name="no-ckpt")
    at = app("views/live.py", run=stopped.name)
    assert all(b.key != "resume_run" for b in at.button)
    (stopped / "ckpt" / "100").mkdir(parents=True)
    (stopped / "ckpt" / "200.orbax-checkpoint-tmp-1").mkdir()
    at = app("views/live.py", run=stopped.name)
    assert at.button(key="resume_run").label == "Resume"
    assert app("views/detail.py", run=stopped.name).button(key="detail_resume").label == "Resume"
    finished = fake_run(root, "regression", "finished")
    (finished / "ckpt" / "100").mkdir(parents=True)
    assert all(b.key != "detail_resume" for b in app("views/detail.py", run=finished.name).button)


def test_resume_button_continues_a_stopped_run_in_a_new_process(root: Path) -> None:
    cfg = parse_config("regression", {"steps": 20000, "log_every": 100})
    run_dir = launcher.launch("regression", cfg, name="to-resume", wandb_mode="disabled")
    first_pid = launch_files.launch_info(run_dir)["pid"]
    wait_status(run_dir, ("running",), min_step=1)
    launcher.stop(run_dir)
    stopped = wait_status(run_dir, ("stopped", "finished", "failed", "crashed"), timeout=60)
    assert stopped["state"] == "stopped" and launcher.has_checkpoint(run_dir), stopped
    at = app("views/live.py", run=run_dir.name)
    at.button(key="resume_run").click().run()
    assert not at.exception
    resume = launch_files.launch_info(run_dir)["resume"]
    assert resume["pid"] != first_pid and resume["command"][3:5] == ["resume", str(run_dir)]
    assert dashboard_state.run_status(run_dir)["state"] in ("starting", "running", "finished")  # no longer "stopped"
    deadline = time.monotonic() + 120
    while run_store.read_status(run_dir).get("pid") != resume["pid"] and time.monotonic() < deadline:
        time.sleep(0.2)
    status = wait_status(run_dir, ("finished", "failed", "crashed", "stopped"))
    assert status["state"] == "finished" and status["resumed_from"] > 0 and status["pid"] == resume["pid"], status
    steps = [r["step"] for r in run_store.read_metrics(run_dir)[0]]
    assert steps == sorted(set(steps)) and steps[-1] == 20000  # continued, nothing logged twice
    at = app("views/live.py", run=run_dir.name)
    assert all(b.key != "resume_run" for b in at.button)


# -- detail page -----------------------------------------------------------------------------------


def test_tensorboard_button_starts_tensorboard_and_links_to_it(root: Path) -> None:
    d = fake_run(root, "regression", "finished")
    at = app("views/detail.py", run=d.name)
    try:
        at.button(key="tb_start").click().run()
        assert not at.exception and not at.error, [e.value for e in at.error]
        (link,) = [b for b in at.get("link_button") if b.proto.label == "Open TensorBoard"]
        url = link.proto.url
        assert url.startswith("http://127.0.0.1:")
        with urllib.request.urlopen(url, timeout=10) as r:
            assert r.status == 200
    finally:
        tensorboard_server.close_tensorboards()
    with pytest.raises(OSError):
        urllib.request.urlopen(url, timeout=5)


def test_mnist_form_says_which_datasets_are_available_locally(
    root: Path, fashion_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("JAXDASH_DATA_DIR", raising=False)
    at = app()
    at.segmented_control(key="task").set_value("mnist").run()
    (note,) = [c.value for c in at.caption if "MNIST:" in c.value]
    assert "MNIST: not found locally, will be downloaded to" in note and "needs internet" in note
    assert f"Fashion-MNIST: found in `{fashion_dir}`" in note
