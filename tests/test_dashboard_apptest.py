"""Dashboard pages driven headlessly with streamlit.testing.v1.AppTest.

History/detail tests write run directories by hand (the run store is the contract);
the launch and stop tests start real training processes through the page.
"""

from __future__ import annotations

import subprocess
import urllib.request
from pathlib import Path

import pytest

from dashboard.processes import launcher, tensorboard_server
from runstore import launch_files, run_folder, run_store
from settings.config import parse_config
from tests.apptest_pages import app, dirs, errors_under, fake_run, submit_mnist_form, wait_status
from tests.chart_elements import charts, figure, trace_lengths
from training import cli
from training.tasks import load_task


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
    fit = figure(charts(live)[0])["data"]
    assert [t["name"] for t in fit] == ["data", "true", "model"] and trace_lengths(charts(live)[0])[0] == 128


USER_TASK = """
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
import optax

from settings.fields import setting, with_default
from training.tasks.summaries import FitSummary
from settings.task import StepsConfig
from training.tasks.base import Data, Task


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
    doc = run_store.read_json(run_dir / run_folder.CONFIG)
    assert (doc["task"], doc["task_spec"], doc["panels"], doc["config"]["width"]) == (
        "tinysine",
        spec,
        ["fit", "loss"],
        24,
    )
    live = app("views/live.py", run=run_dir.name)
    fit, loss = charts(live)
    traces = figure(fit)["data"]
    assert [t["name"] for t in traces] == ["data", "true", "model"] and trace_lengths(fit) == [64, 64, 64]
    assert trace_lengths(loss) == [400 // 20 + 1]  # the step-0 loss, then one train/loss point per chunk
    assert "train/loss" in [m.label for m in live.metric]
    detail = app("views/detail.py", run=run_dir.name)
    keys = [c.key for c in charts(detail)]  # its panels, then the all-metrics and system grids
    # its own panels, one per other logged key (perf/steps_per_sec), then the all-metrics and system grids
    assert [k.rsplit("_", 1)[-1] for k in keys[:2] + keys[3:]] == ["fit", "loss", "metrics", "system"]
    assert keys[2].startswith("detail_keys_") and "perf/steps_per_sec" in charts(detail)[2].proto.spec.replace(
        "\\u002f", "/"
    )
    assert not detail.error


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
