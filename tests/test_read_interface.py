"""The pages' one read interface (dashboard/reading/provider) over every kind of run folder it serves, each
written as its writer writes it: a built-in task's run and a population member (the run store's own writer),
a client script's run (a real `jaxdash` subprocess), a W&B script's run with W&B's offline copy (the same,
`import jaxdash as wandb`, WANDB_MODE=offline) and a TensorBoard logdir's run (tensorboardX's event files,
mirrored). The same calls answer for all of them; what differs is in the answers, never in the calls. Then a
layout check: no page, panel, page-side reading module or route imports a runstore reader."""

from __future__ import annotations

import ast
import time
from pathlib import Path

import numpy as np
import pytest
from tensorboardX import SummaryWriter

from dashboard.processes.launch_status import run_status
from dashboard.reading import provider
from runstore import run_index, tb_logdir
from runstore.run_folder import RunFolder
from tests import client_scripts
from tests.apptest_pages import fake_run
from tests.test_layout import ROOT, imports

CLIENT = """
import jaxdash
run = jaxdash.init(project="own-loop", name="client-run", config={"lr": 0.1})
for step in range(6):
    run.log({"train/step_loss": 1.0 / (step + 1), "phase": "warmup" if step < 3 else "steady",
             "weights": jaxdash.Histogram([0.1 * step, 0.2, 0.3, 0.4])}, step=step)
print("trained", flush=True)
run.finish()
"""
WANDB = """
import jaxdash as wandb
run = wandb.init(project="demo", name="wandb-run", group="exp-a", job_type="train", config={"lr": 0.2})
wandb.define_metric("epoch")
wandb.define_metric("val/*", step_metric="epoch")
wandb.define_metric("secret", hidden=True)
for i in range(4):
    wandb.log({"train/loss": 1.0 / (i + 1), "secret": float(i)})
    wandb.log({"val/loss": 2.0 / (i + 1), "epoch": 10 * i})
wandb.summary["best_model"] = "m-3"
wandb.alert(title="Loss high", text="loss is high", level=wandb.AlertLevel.WARN)
"""


def _client(tmp: Path, root: Path, code: str, name: str, **env: str) -> Path:
    """A real script's run folder under `root` (the script runs to its end)."""
    (tmp / name).mkdir()
    done, made = client_scripts.run(tmp / name, code, **env)
    assert done.returncode == 0, done.stderr[-2000:]
    (run_dir,) = provider.run_folders(made)
    return run_dir.rename(root / run_dir.name)


def _mirror(logs: Path, root: Path) -> Path:
    """A tensorboardX run (scalars, a text, a histogram) mirrored into the runs root, synced to its last step."""
    writer = SummaryWriter(str(logs / "tb_run"), flush_secs=0.1)
    for step, loss in enumerate([3.0, 1.0, 2.0]):
        writer.add_scalar("loss", loss, step)
    writer.add_text("notes", "hello", 2)
    writer.add_histogram("w", np.arange(10.0), 2)
    writer.close()
    mirror = tb_logdir.mirror_root(root) / tb_logdir.mirror_id("tb_run")
    for _ in range(200):  # the writer's thread may still be writing: wait for the event, not a fixed time
        tb_logdir.sync(logs, root)
        steps = [r.get("step") for r in RunFolder(mirror).records()[0]]
        if 2 in steps and provider.texts(mirror) and provider.histograms(mirror):
            return mirror
        time.sleep(0.05)
    raise AssertionError("the mirror never held its last step, text and histogram")


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One runs root holding a run of every kind, by kind."""
    tmp = tmp_path_factory.mktemp("provider")
    root, logs = tmp / "runs", tmp / "logs"
    root.mkdir()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("JAXDASH_RUNS", str(root))
        mp.setenv("JAXDASH_LOGDIR", str(logs))
        found = {
            "engine": fake_run(root, "regression", "finished", n=50, name="built-in"),
            "member": fake_run(root, "mnist", "finished", n=20, name="member-0", group="pop-1", member=0),
            "client": _client(tmp, root, CLIENT, "client", WANDB_MODE="disabled"),
            "wandb": _client(tmp, root, WANDB, "wandb"),
            "tensorboard": _mirror(logs, root),
        }
        yield {"root": root, **found}


def test_every_kind_is_listed_with_its_kind_state_and_summary(runs: dict[str, Path], monkeypatch) -> None:
    monkeypatch.setenv("JAXDASH_RUNS", str(runs["root"]))
    monkeypatch.setenv("JAXDASH_LOGDIR", str(runs["root"].parent / "logs"))
    root = runs["root"]
    listed = {r.path for r in provider.list_runs(root, run_status) + provider.logdir_runs(root, run_status)}
    assert listed == {runs[k] for k in ("engine", "member", "client", "wandb", "tensorboard")}
    run_index.update(root)
    indexed = {Path(r.path): r for r in provider.matching(root)}
    kinds = {k: (indexed[runs[k]].kind, indexed[runs[k]].state) for k in ("engine", "member", "client", "tensorboard")}
    assert kinds == {
        "engine": ("engine", "finished"),
        "member": ("member", "finished"),
        "client": ("client", "finished"),
        "tensorboard": ("tensorboard", kinds["tensorboard"][1]),
    } and kinds["tensorboard"][1] in ("running", "finished")
    assert indexed[runs["tensorboard"]].summary["loss"] == [2.0, 1.0, 3.0]  # last, min, max
    assert provider.count(root, 'kind = "client"') == 2  # a W&B script is a client run
    assert provider.matching_ids(root, "config.lr = 0.2") == [runs["wandb"].name]


def test_abilities_replace_asking_for_the_kind_of_a_run(runs: dict[str, Path]) -> None:
    """Stop, the task's own panels and the per-tag charts are decided by the interface, for every kind."""
    got = {
        k: (a.kind, a.stoppable, a.own_task, a.charts_per_tag, a.keys_by_prefix)
        for k in ("engine", "member", "client", "wandb", "tensorboard")
        if (a := provider.abilities(runs[k]))
    }
    assert got == {
        "engine": ("engine", True, True, False, False),
        "member": ("member", True, True, False, False),
        "client": ("client", True, False, False, True),
        "wandb": ("client", True, False, False, True),
        "tensorboard": ("tensorboard", False, False, True, False),
    }


def test_scalars_after_a_cursor_each_record_once_and_downsampled(runs: dict[str, Path]) -> None:
    for kind, tag, count in (
        ("engine", "train/loss", 50),
        ("client", "train/step_loss", 6),
        ("tensorboard", "loss", 3),
    ):
        d = runs[kind]
        steps, values = provider.scalars(d).series(tag, "step")
        assert len(steps) == len(values) == count, kind
        records, cursor = provider.records_after(d, 0, 1 << 20)
        assert sum(tag in r for r in records) == count and cursor == provider.records_size(d), kind
        assert provider.records_after(d, cursor, 1 << 20) == ([], cursor), kind  # nothing read twice
        assert provider.csv_problem(d) is None and tag in provider.csv_bytes(d).decode().splitlines()[0], kind
    d = runs["engine"]
    _, cursor = provider.records_after(d, 0, 1 << 20)
    RunFolder(d).append_records([{"step": 9999, "wall": 1.0, "ts": time.time(), "train/loss": 0.01}])
    new, end = provider.records_after(d, cursor, 1 << 20)
    assert [r["step"] for r in new] == [9999] and end == provider.records_size(d)
    assert provider.start_time(d) is not None
    x = np.arange(10_000.0)
    keep = provider.downsample(x, np.sin(x), 100)
    assert len(keep) <= 400 and 0 in keep and 9999 in keep


def test_media_texts_and_tables_of_every_kind(runs: dict[str, Path]) -> None:
    assert provider.run_panels(runs["engine"]) == provider.config_doc(runs["engine"])["panels"]
    data, model, _ = provider.fit(runs["engine"])
    assert data is not None and model is not None  # the regression task's fit tables
    assert [t for t, _ in provider.texts(runs["client"])["phase"]] == list(range(6))
    assert provider.texts(runs["client"])["phase"][-1][1] == "steady"
    assert len(provider.histograms(runs["client"])["weights"]) == 6 and provider.histograms_stamp(runs["client"])
    assert provider.texts(runs["tensorboard"])["notes/text_summary"] == [(2, "hello")]
    assert [h[0] for h in provider.histograms(runs["tensorboard"])["w"]] == [2]
    assert provider.texts(runs["engine"]) == {} and provider.histograms_stamp(runs["engine"]) == ()


def test_wandb_fields_definitions_summary_and_alerts(runs: dict[str, Path]) -> None:
    d = runs["wandb"]
    meta = provider.wandb_meta(d)
    assert (meta.group, meta.job_type) == ("exp-a", "train")
    defs = provider.definitions(d)
    assert provider.hidden(defs, "secret") and not provider.hidden(defs, "train/loss")
    axes = provider.chart_axes(defs, ["train/loss", "secret", "val/loss", "epoch"])
    assert axes == {provider.STEP: ["train/loss", "epoch"], "epoch": ["val/loss"]}
    summary, problem = provider.summary(d)
    assert problem is None and summary["best_model"] == "m-3"
    assert [a["title"] for a in provider.alerts(d)] == ["Loss high"] and provider.alert_count(d) == 1
    assert provider.wandb_meta(runs["engine"]).group == "" and provider.definitions(runs["tensorboard"]) == {}


# What a page may still import of runstore: names (not reads) and the page's writes, each with why.
ALLOWED = {
    "runstore.tags": "metric names: vocabulary, not a read",
    "runstore.run_states": "run states: vocabulary, not a read",
    "runstore.layout_prefs": "the panel layout's pins and closed sections, read and saved together (a page pref)",
    "runstore.launch_files": "write_launch only: a launch's found population recorded while listing",
    "runstore.run_store": "delete_run only: the Runs page's Delete",
}
WRITES_ONLY = {"runstore.launch_files": {"write_launch"}, "runstore.run_store": {"delete_run"}}
PAGES = ("dashboard/views", "dashboard/panels", "dashboard/reading", "dashboard/server")


def _page_modules() -> list[Path]:
    provider_dir = ROOT / "dashboard" / "reading" / "provider"
    paths = [p for folder in PAGES for p in (ROOT / folder).rglob("*.py")]
    return sorted(p for p in paths if not p.is_relative_to(provider_dir))


def _attributes(path: Path, module: str) -> set[str]:
    """The attributes a file reads off `module` (imported as its last name)."""
    alias = module.rpartition(".")[2]
    tree = ast.parse(path.read_text(), str(path))
    return {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute) and ast.unparse(n.value) == alias}


def test_no_page_imports_a_runstore_reader() -> None:
    """Pages, panels, page-side reading and routes read through dashboard/reading/provider alone (function-level
    imports included); what they import of runstore is a name or a write, each allowed with why."""
    bad = []
    for path in _page_modules():
        rel = path.relative_to(ROOT).as_posix()
        for imported, line in imports(path):
            if imported.split(".")[0] != "runstore":
                continue
            module = imported if imported in ALLOWED else imported.rpartition(".")[0]
            if module not in ALLOWED or imported not in ALLOWED:
                bad.append(f"{rel}:{line} imports {imported}")
            elif module in WRITES_ONLY and not _attributes(path, module) <= WRITES_ONLY[module]:
                bad.append(f"{rel}:{line} reads {sorted(_attributes(path, module) - WRITES_ONLY[module])} of {module}")
    assert not bad, "read these through dashboard/reading/provider:\n" + "\n".join(bad)


def test_the_reader_check_sees_a_reader_import(tmp_path: Path) -> None:
    """The check is not vacuous: a page module importing a reader, or reading through a write module, is seen."""
    page = tmp_path / "page.py"
    page.write_text(
        "from runstore import tb_logdir, tags\nfrom runstore import launch_files\nx = launch_files.launch_info\n"
    )
    assert [i for i, _ in imports(page)] == ["runstore.tb_logdir", "runstore.tags", "runstore.launch_files"]
    assert _attributes(page, "runstore.launch_files") == {"launch_info"} and "runstore.tb_logdir" not in ALLOWED
