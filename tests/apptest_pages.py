"""AppTest helpers shared by the page tests: the app run on a page, run folders written by hand the way a
training process writes them, and waits on a real run's status."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
from streamlit.testing.v1 import AppTest
from streamlit.testing.v1.element_tree import Error

from dashboard.state import PAGE_KEY
from runstore import run_folder, run_store, tags
from runstore.run_folder import RunFolder
from runwriters.base import Table
from runwriters.store import RunStoreWriter

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


def dirs(root: Path) -> list[Path]:
    """The folders under a runs root (not its queue.db)."""
    return [d for d in root.iterdir() if d.is_dir()]


# The pages' url paths where they are not the file's name (app.py's st.Page url_path).
URL_PATHS = {"views/launch.py": "new", "views/sweep.py": "sweeps"}


def app(page: str | None = None, run: str | None = None, **state: object) -> AppTest:
    """The app run once on `page` (e.g. "views/runs.py"; New run without one).

    AppTest names a page by its file's name before the first run, which is the url_path of Live, Runs and
    Run detail: those run at once; the others after a first run on New run (where "/" goes).
    """
    at = AppTest.from_file(APP, default_timeout=60)
    if run:
        at.query_params["run"] = run
    for k, v in state.items():
        at.session_state[k] = v
    url_path = URL_PATHS.get(page, Path(page).stem) if page else "new"
    if page and url_path == Path(page).stem:
        at.switch_page(page)
    at.run()
    if at.session_state[PAGE_KEY] != url_path:
        at.switch_page(page).run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.session_state[PAGE_KEY] == url_path, f"the app ran {at.session_state[PAGE_KEY]}, not {page}"
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
    RunFolder(d).write_config(task, cfg, name=name, task_spec=task, panels=PANELS[task], **extra)
    final = {"train/loss": 0.25} if task == "regression" else {"train/loss": 0.3, "test/acc": 0.87}
    RunFolder(d).write_status(
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
    RunFolder(d).append_records(recs)
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
        status = RunFolder(run_dir).status()
        if status.get("state") in states and (status.get("step") or 0) >= min_step:
            return status
        time.sleep(0.3)
    log = (run_dir / run_folder.LOG).read_text(errors="replace")[-2000:] if (run_dir / run_folder.LOG).exists() else ""
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
