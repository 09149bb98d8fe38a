"""`import jaxdash as wandb` follows W&B's SDK contract call by call (issue 35): the same probe script run
with real `import wandb` (offline) and with jaxdash, as real subprocesses, compared through W&B's own
reader (`wandb leet inspect`) and our run store; then what reaches our run folder, the page and the W&B
copy: init's arguments, Settings, the WANDB_* variables, groups, disabled mode, define_metric."""

from __future__ import annotations

import json
from pathlib import Path

from tensorboard.backend.event_processing import event_accumulator as ea
from tensorboard.plugins.hparams import metadata as hp_metadata

from dashboard.reading import groups
from runstore import run_folder, run_notes, run_store
from runstore.run_folder import RunFolder
from tests.client_scripts import only_run, rows, run, wandb_history, wandb_run_record
from tests.test_writers_wandb import inspect_summary

STEPS = """
import argparse, json, os, sys
if sys.argv[-1] == "wandb":
    import wandb
else:
    import jaxdash as wandb

run = wandb.init(project="contract", config={"x": 1}, mode="offline", dir=os.getcwd(), job_type="train", group="g")
parser = argparse.ArgumentParser()
parser.add_argument("--lr", type=float, default=0.1)
parser.add_argument("--batch-size", type=int, default=8)
wandb.config.update(parser.parse_args([]))
wandb.config.step_size = 0.001
wandb.config.setdefaults({"x": 5, "y": 2})
try:
    wandb.config.update({"lr": 0.2})
    changed = "changed"
except Exception as exc:
    changed = type(exc).__name__
wandb.config.update({"lr": 0.3}, allow_val_change=True)
steps = [run.step]
run.log({"a": 1}, commit=False); run.log({"b": 2}); steps.append(run.step)     # one step
run.log({"c": 3}, commit=False); run.log({}); steps.append(run.step)           # log({}) commits
run.log({"d": 4}, step=5); steps.append(run.step)                              # step 5, open
run.log({"e": 5}, step=5)                                                      # merged into 5
run.log({"f": 6}, step=3)                                                      # below: dropped
run.log({"g": 7}); steps.append(run.step)                                      # joins 5, commits
run.log({"h": 8})
run.log({"n": {"i": 9}})
run.summary["best"] = "text"
run.summary.update({"score": 0.5})
again = wandb.init() is run                                                    # a script's second init
print(json.dumps({"id": run.id, "steps": steps, "changed": changed, "config": dict(wandb.config.items()), "again": again,
                  "summary": {k: run.summary[k] for k in ("best", "score", "h")},
                  "attrs": [run.project, run.group, run.job_type, list(run.tags)]}))
run.finish()
"""


def _probe(tmp_path: Path, code: str, which: str, **env: str) -> tuple[dict, Path]:
    where = tmp_path / which
    where.mkdir()
    out, root = run(where, code.replace('sys.argv[-1] == "wandb"', repr(which == "wandb")), **env)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1]), root


def _ours(run_dir: Path) -> list[dict]:
    return [{("_step" if k == "step" else k): v for k, v in r.items()} for r in rows(run_dir)]


def test_steps_config_and_summary_match_wandb(tmp_path: Path) -> None:
    """commit=False, log({}), step= above / equal / below, run.step, config from a Namespace, attribute
    set, setdefaults, a changed value refused without allow_val_change, string summaries, a second init."""
    theirs, _ = _probe(tmp_path, STEPS, "wandb")
    ours, root = _probe(tmp_path, STEPS, "jaxdash")
    assert ours.pop("id") == only_run(root).name
    their_id = theirs.pop("id")
    assert ours == theirs
    # (W&B's second init makes a folder of its own, then returns the active run)
    (their_dir,) = (tmp_path / "wandb" / "wandb").glob(f"offline-run-*-{their_id}")
    expected = wandb_history(their_dir)
    assert [h["_step"] for h in expected] == [0, 1, 5, 6, 7]
    run_dir = only_run(root)
    assert _ours(run_dir) == expected  # every step and value, W&B's keys ("n.i")
    copy = Path(RunFolder(run_dir).status()["wandb"]["dir"])
    assert wandb_history(copy) == expected  # and the W&B copy our client wrote (no keys of ours)
    assert {k: v for k, v in inspect_summary(copy)["summary"].items() if not k.startswith("_")} == {
        k: v for k, v in inspect_summary(their_dir)["summary"].items() if not k.startswith("_")}  # fmt: skip
    doc = run_store.read_json(run_dir / run_folder.CONFIG)
    assert doc["config"] == theirs["config"]
    assert {k: v for k, v in inspect_summary(copy)["config"].items() if not k.startswith("_")} == theirs["config"]
    record = wandb_run_record(copy)
    assert (record["run_group"], record["job_type"], record.get("tags", [])) == ("g", "train", [])  # no project tag
    assert run_store.read_json(run_dir / run_folder.SUMMARY)["best"] == "text"


def test_every_init_argument_and_settings_are_accepted(tmp_path: Path) -> None:
    out, root = run(tmp_path, """
        import jaxdash as wandb
        settings = wandb.Settings(run_name="from-settings", console="off", silent=True)
        run = wandb.init(entity="team", project="args", dir=".", id="args-1", notes="n", tags=("t",),
                         config={"a": 1, "b": 2}, config_exclude_keys=["b"], allow_val_change=True, group="grp",
                         job_type="eval", mode="offline", force=False, reinit="finish_previous", resume="allow",
                         save_code=True, tensorboard=False, sync_tensorboard=False, monitor_gym=False, anonymous="never",
                         settings=settings, magic=True)
        wandb.login(); wandb.termlog("hello"); wandb.termwarn("careful"); wandb.watch(None); wandb.unwatch()
        wandb.log({"loss": 1.0})
        print(run.id, run.name, run.entity, run.project, run.path, run.url, settings.run_name)
    """, WANDB_MODE="disabled")  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.split() == [
        "args-1",
        "from-settings",
        "team",
        "args",
        "team/args/args-1",
        "None",
        "from-settings",
    ]
    assert out.stderr.count("init(save_code=...) has no meaning") == 1 and out.stderr.count("watch()") == 1
    run_dir = only_run(root)
    assert run_dir.name == "args-1"
    doc = run_store.read_json(run_dir / run_folder.CONFIG)
    assert doc["config"] == {"a": 1} and doc["job_type"] == "eval" and doc["entity"] == "team"
    assert rows(run_dir) == [{"step": 0, "loss": 1.0}]


def test_wandb_variables_reach_the_run_folder_the_page_and_the_copy(tmp_path: Path) -> None:
    """WANDB_NAME/PROJECT/RUN_GROUP/... reached only the W&B copy; tags= gained the project as a tag."""
    env = {"WANDB_PROJECT": "envproj", "WANDB_NAME": "envname", "WANDB_RUN_GROUP": "envgroup",
           "WANDB_JOB_TYPE": "eval", "WANDB_TAGS": "t1,t2", "WANDB_NOTES": "env notes", "WANDB_RUN_ID": "envid123"}  # fmt: skip
    out, root = run(tmp_path, """
        import jaxdash as wandb
        run = wandb.init(tensorboard=False)
        wandb.log({"loss": 1.0})
        print(run.id, run.name, run.project, run.group, run.job_type, ",".join(run.tags), run.notes, sep="|")
    """, **env)  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip() == "envid123|envname|envproj|envgroup|eval|t1,t2|env notes"
    run_dir = only_run(root)
    assert run_dir.name == "envid123"
    info = run_store.read_run(run_dir)
    doc = run_store.read_json(run_dir / run_folder.CONFIG)
    assert (info.task, info.name, doc["wandb_group"], doc["job_type"]) == ("envproj", "envname", "envgroup", "eval")
    notes = run_notes.load(run_dir)
    assert (notes.tags, notes.notes) == (["t1", "t2"], "env notes")  # the Runs table's tags and notes
    record = wandb_run_record(Path(info.status["wandb"]["dir"]))
    assert (record["run_id"], record["project"], record["run_group"], record["job_type"]) == (
        "envid123", "envproj", "envgroup", "eval")  # fmt: skip
    assert record["tags"] == ["t1", "t2"]  # not the project


def test_a_wandb_group_is_no_population(tmp_path: Path) -> None:
    """W&B's group/worker example: runs of one group each keep their own state and config."""
    out, root = run(tmp_path, """
        import jaxdash as wandb
        for fold in range(2):
            run = wandb.init(project="cv", group="exp-1", job_type="fold", config={"fold": fold}, reinit=True,
                             tensorboard=False)
            wandb.log({"acc": 0.5 + fold / 10})
            run.finish(exit_code=fold)
    """, WANDB_MODE="disabled")  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    runs = sorted((run_store.read_run(d) for d in run_store.run_folders(root)), key=lambda r: r.config["fold"])
    assert [r.config for r in runs] == [{"fold": 0}, {"fold": 1}]
    assert [r.status["state"] for r in runs] == ["finished", "failed"]
    assert [groups.group_of(r) for r in runs] == [None, None]  # never one "population"
    assert [run_store.read_json(r.path / run_folder.CONFIG)["wandb_group"] for r in runs] == ["exp-1", "exp-1"]


def test_mode_disabled_is_a_no_op_run(tmp_path: Path) -> None:
    out, root = run(tmp_path, """
        import jaxdash as wandb
        run = wandb.init(project="off", mode="disabled", config={"lr": 0.1})
        wandb.config.update({"batch": 8})
        for i in range(3):
            wandb.log({"loss": 1.0})
        run.summary["best"] = 1
        print(wandb.run is run, run.disabled, run.step, run.config.lr, run.config.batch, run.summary["best"])
        wandb.finish()
    """)  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.split() == ["True", "True", "3", "0.1", "8", "1"]
    assert not root.exists() or not list(root.iterdir())


DEFINE = """
import json, sys
if sys.argv[-1] == "wandb":
    import wandb
else:
    import jaxdash as wandb
run = wandb.init(project="defs")
run.define_metric("epoch", hidden=True)
run.define_metric("val/*", step_metric="epoch", summary="min,max")
run.define_metric("acc", summary="max")
run.define_metric("loss", summary="none")
run.define_metric("lr", summary="mean")
run.define_metric("f", summary="first")
for e, (v, a, l) in enumerate([(0.5, 0.1, 3.0), (0.2, 0.9, 2.0), (0.4, 0.3, 1.0)]):
    run.log({"epoch": e, "acc": a, "loss": l, "lr": e, "f": e + 10})
    run.log({"val/loss": v})  # no epoch: step_sync adds its last value
run.finish()
"""


def test_define_metric_is_recorded_and_its_summaries_match_wandb(tmp_path: Path) -> None:
    _, _ = _probe(tmp_path, DEFINE.replace("run.finish()", "run.finish(); print('{}')"), "wandb")
    (their_dir,) = (tmp_path / "wandb" / "wandb").glob("offline-run-*")
    their_rows = [h for h in wandb_history(their_dir) if "val/loss" in h]
    _, root = _probe(tmp_path, DEFINE.replace("run.finish()", "run.finish(); print('{}')"), "jaxdash",
                     WANDB_MODE="disabled")  # fmt: skip
    run_dir = only_run(root)
    assert [{k: r[k] for k in ("epoch", "val/loss")} for r in rows(run_dir) if "val/loss" in r] == [
        {k: r[k] for k in ("epoch", "val/loss")} for r in their_rows]  # fmt: skip
    doc = run_store.read_json(run_dir / run_folder.CONFIG)["define_metric"]
    assert doc["val/*"] == {"step_metric": "epoch", "step_sync": True, "summary": ["min", "max"]}
    assert doc["epoch"] == {"hidden": True}
    theirs = {k: v for k, v in inspect_summary(their_dir)["summary"].items() if not k.startswith("_")}
    ours = run_store.read_json(run_dir / run_folder.SUMMARY)
    assert ours == theirs
    assert RunFolder(run_dir).status()["final"]["val/loss"] == 0.2  # one number a metric for the Runs table


def test_config_and_summary_set_after_init_reach_tensorboard_and_the_copy(tmp_path: Path) -> None:
    """The usual W&B way (config set after init, a string summary, no finish) reached neither config.json,
    TensorBoard's HParams nor W&B."""
    out, root = run(tmp_path, """
        import argparse
        import jaxdash as wandb
        wandb.init(project="hp")
        wandb.config.lr = 0.1
        wandb.config.update(argparse.Namespace(batch=8, name="x"))
        for i in range(5):
            wandb.log({"train/loss": 1.0 / (i + 1)})
        wandb.summary["note"] = "text"
        wandb.config.update({"late": 3})
    """)  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    run_dir = only_run(root)
    expected = {"lr": 0.1, "batch": 8, "name": "x", "late": 3}
    assert run_store.read_json(run_dir / run_folder.CONFIG)["config"] == expected
    assert run_store.read_json(run_dir / run_folder.SUMMARY) == {"train/loss": 0.2, "note": "text"}
    status = RunFolder(run_dir).status()
    acc = ea.EventAccumulator(status["tensorboard"]["logdir"])
    acc.Reload()
    start = hp_metadata.parse_session_start_info_plugin_data(
        acc.PluginTagToContent("hparams")[hp_metadata.SESSION_START_INFO_TAG]
    )
    assert (start.hparams["lr"].number_value, start.hparams["name"].string_value) == (0.1, "x")
    copy = inspect_summary(Path(status["wandb"]["dir"]))
    assert {k: v for k, v in copy["config"].items() if not k.startswith("_")} == expected
    assert copy["summary"]["note"] == "text" and copy["summary"]["train/loss"] == 0.2  # W&B's: the last value
