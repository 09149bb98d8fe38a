"""W&B writer against the real SDK in offline mode, read back with `wandb leet inspect --json`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from runstore import run_folder
from runwriters.base import Progress, Tracking
from runwriters.wandb import writer as wandb_writer
from runwriters.wandb.mode import init_kwargs
from runwriters.wandb.writer import WandbWriter, resolve_mode
from tests import wandb_leet
from training.tasks.summaries import ClassificationSummary, FitSummary, write_summaries

CONFIG = {"task": "mnist", "dataset": "fashion_mnist", "hidden": [32], "lr": 0.001, "epochs": 1}
STEPS = [20, 40, 60, 80, 100]


@pytest.fixture(autouse=True)
def wandb_offline_env(tmp_path, monkeypatch):
    """W&B offline with all its state in tmp; any stray network call goes to a closed local port."""
    for sub in ("wandb_dir", "wandb_cache", "wandb_config", "wandb_data", "home"):
        (tmp_path / sub).mkdir()
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setattr(wandb_writer, "FLUSH_SECS", 0.0)  # every flush logs (the throttle has its own test)
    monkeypatch.delenv("WANDB_DIR", raising=False)  # W&B files in the run directory unless a test sets it
    monkeypatch.setenv("WANDB_CACHE_DIR", str(tmp_path / "wandb_cache"))
    monkeypatch.setenv("WANDB_CONFIG_DIR", str(tmp_path / "wandb_config"))
    monkeypatch.setenv("WANDB_DATA_DIR", str(tmp_path / "wandb_data"))
    monkeypatch.setenv("WANDB_BASE_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("NETRC", str(tmp_path / "home" / ".netrc"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("WANDB_DISABLE_GIT", "true")  # wandb's git probing must not touch the repo's index
    monkeypatch.delenv("WANDB_API_KEY", raising=False)


inspect_records = wandb_leet.records  # what the .wandb file holds now (an unfinished or killed run too)
finished_records = wandb_leet.finished_records  # a closed run's records, its exit record written
inspect_summary = wandb_leet.finished_summary  # a closed run's summary, its exit record written


def history(records: list[dict]) -> list[dict]:
    return [r["history"]["item"] for r in records if r.get("type") == "history"]


def logged_steps(records: list[dict], key: str) -> list[int]:
    """global_step of every history row that has `key` (or a nested `key.*`)."""
    return [int(h["global_step"]) for h in history(records) if any(k == key or k.startswith(key + ".") for k in h)]


def _report() -> ClassificationSummary:
    labels, preds = np.array([0, 1, 2, 1]), np.array([0, 1, 0, 1])
    probs = np.eye(3)[preds] * 0.8 + 0.1  # "two" is never predicted: every sample scores 0.1 for it
    images = np.zeros((4, 28, 28), np.uint8)
    return ClassificationSummary(["zero", "one", "two"], labels, preds, images, labels, preds, probs)


def _fit() -> FitSummary:
    x = np.linspace(-1, 1, 20)
    return FitSummary(x, x, x, 0 * x)


def test_offline_run_round_trip(tmp_path):
    run_dir = tmp_path / "run-1"
    run_dir.mkdir()
    w = WandbWriter(run_dir, CONFIG, Tracking("offline", job_type="mnist"), name="nice name")
    assert w.active and w.wait_ready(60), w.info
    info = w.info
    assert info["mode"] == "offline" and info["url"] is None
    assert info["id"] == (run_dir / "wandb_id").read_text().strip() != "run-1", "a random id kept in the run dir"
    assert Path(info["dir"]).parent == run_dir / "wandb"
    assert info["sync_command"] == f"wandb sync {info['dir']}"

    w.write_hparams(CONFIG)
    write_summaries(w, 0, [_fit()], first=True)
    for i, step in enumerate(STEPS):
        w.write_scalars(step, {"train/loss": 1 / step, "train/acc": step / 100}, Progress(step, 100, 1 + i // 3, 2))
        w.flush()
    w.write_scalars(100, {"test/acc": 0.75})  # same step as the last chunk, after its flush
    w.write_histograms(100, {"params/w": np.arange(10.0)})
    write_summaries(w, 100, [_report()], first=False)
    w.write_summary({"test/acc": 0.75, "train/loss": 0.01})
    w.close("finished")

    summary = inspect_summary(info["dir"])
    assert summary["state"] == "finished" and summary["exit_code"] == 0
    assert summary["name"] == "nice name" and summary["project"] == "jax-dashboard"
    assert summary["tags"] == ["mnist"]
    assert summary["config"]["hidden"] == [32] and summary["config"]["dataset"] == "fashion_mnist"
    assert summary["summary"]["final"] == {"test/acc": 0.75, "train/loss": 0.01}
    assert summary["summary"]["train/loss"] == {"min": pytest.approx(1 / 100)}, "best so far: min for losses"
    assert summary["summary"]["train/acc"] == {"max": 1.0}, "best so far: max for accuracies"
    assert summary["summary"]["run/state"] == "finished"

    records = finished_records(info["dir"])
    (run,) = [r["run"] for r in records if r.get("type") == "run"]
    assert run["job_type"] == "mnist"
    rows = history(records)
    assert [int(h["_step"]) for h in rows] == [int(h["global_step"]) for h in rows], "rows are optimizer steps"
    assert logged_steps(records, "train/loss") == STEPS
    assert logged_steps(records, "test/acc") == [100], "a late row keeps its step"
    assert logged_steps(records, "params/w") == [100]
    assert logged_steps(records, "fit/plot") == [0]
    assert logged_steps(records, "test/predictions") == [100]
    assert logged_steps(records, "test/confusion_matrix") == [100]
    assert [h["epoch"] for h in rows if "train/loss" in h] == [1, 1, 1, 2, 2]
    _check_pr_chart(records, info["dir"])
    metrics = {r["metric"].get("name"): r["metric"] for r in records if r.get("type") == "metric"}
    assert metrics["train/loss"]["step_metric"] == "global_step"
    assert metrics["epoch"]["step_metric"] == "global_step"


def _check_pr_chart(records: list[dict], run_folder: str) -> None:
    """W&B's PR chart (the panel wandb.plot.pr_curve makes) at the last row, its table in the run's files."""
    assert logged_steps(records, "test/pr_table") == [100]
    updates = [r["config"].get("update", {}) for r in records if r.get("type") == "config"]
    (panel,) = [v for u in updates for k, v in u.items() if k.endswith("test/pr")]
    assert panel["panel_config"]["panelDefId"] == "wandb/area-under-curve/v0"
    (path,) = Path(run_folder, "files", "media", "table", "test").glob("pr_table_100_*.table.json")
    table = json.loads(path.read_text())
    assert table["columns"] == ["class", "precision", "recall"]
    curve = {name: {r: p for n, p, r in table["data"] if n == name} for name in ("zero", "one", "two")}
    assert set(curve["one"].values()) == {1.0}, "both 'one' samples scored highest: a perfect curve"
    # "zero": its one sample ties with a wrong one at the top score: precision 1/2 (1 at recall 0).
    assert curve["zero"][0.0] == 1.0 and {p for r, p in curve["zero"].items() if r > 0} == {0.5}
    assert {p for r, p in curve["two"].items() if r > 0} == {0.25}, "all four samples tie: 1 of 4"
    assert len(curve["zero"]) == 21, "the recall grid of wandb.plot.pr_curve"


def test_flushed_rows_reach_the_file_once_the_next_chunk_is_flushed(tmp_path):
    """A step's row stays open for its snapshot's media; the next chunk's flush commits it, before close."""
    w = WandbWriter(tmp_path, CONFIG, Tracking("offline"))
    assert w.wait_ready(60), w.info  # rows logged before the run exists wait for it (next test)
    for step in STEPS[:4]:
        w.write_scalars(step, {"train/loss": 1.0})
        w.flush()
    deadline = time.monotonic() + 10  # the wandb-core service writes the file asynchronously
    while logged_steps(inspect_records(w.info["dir"]), "train/loss") != STEPS[:3] and time.monotonic() < deadline:
        time.sleep(0.2)
    assert logged_steps(inspect_records(w.info["dir"]), "train/loss") == STEPS[:3]
    w.close("stopped")
    assert logged_steps(finished_records(w.info["dir"]), "train/loss") == STEPS[:4]
    assert inspect_summary(w.info["dir"])["exit_code"] == 0


def test_a_flush_hands_its_rows_to_wandb_core_in_one_hop(tmp_path, monkeypatch):
    """A hop to wandb's asyncio thread per row was most of W&B's CPU: a flush of 300 rows makes one, and every
    row still reaches the file with its value, step and define_metric summary."""
    w = WandbWriter(tmp_path, CONFIG, Tracking("offline"))
    assert w.wait_ready(60), w.info
    asyncer = w.run._interface._asyncer
    hops = []
    real_run = asyncer.run
    monkeypatch.setattr(asyncer, "run", lambda fn: hops.append(1) or real_run(fn))
    steps = np.arange(1, 301)
    w.write_scalar_rows(steps, {"train/loss": 1.0 / steps, "train/acc": steps / 300.0})
    w.flush()
    assert len(hops) == 1
    w.close("finished")
    rows = {int(h["global_step"]): h for h in history(finished_records(w.info["dir"]))}
    assert sorted(rows) == steps.tolist()
    assert [rows[s]["train/loss"] for s in (1, 150, 300)] == pytest.approx([1.0, 1 / 150, 1 / 300])
    summary = inspect_summary(w.info["dir"])
    assert summary["summary"]["train/loss"]["min"] == pytest.approx(1 / 300)


def test_rows_go_one_by_one_through_a_run_without_the_batch_internals(tmp_path):
    """A wandb whose run lacks the internals `one_hop` batches through still gets every row, through `run.log`."""
    from runwriters.wandb.one_hop import one_hop

    class PlainRun:
        def __init__(self):
            self.logged = []

        def log(self, row, step=None, commit=None):
            self.logged.append(step)

    run = PlainRun()
    with one_hop(run):
        for step in range(3):
            run.log({"x": 1.0}, step=step)
    assert run.logged == [0, 1, 2]


def test_flushes_are_throttled_and_close_logs_everything(tmp_path, monkeypatch):
    """W&B log calls cost the loop ~5 ms each: at most one per FLUSH_SECS; close logs what is left."""
    monkeypatch.setattr(wandb_writer, "FLUSH_SECS", 3600.0)
    w = WandbWriter(tmp_path, CONFIG, Tracking("offline"))
    assert w.wait_ready(60), w.info
    calls = []
    real_flush = w._rows.flush
    monkeypatch.setattr(w._rows, "flush", lambda: calls.append(1) or real_flush())
    for step in STEPS:
        w.write_scalars(step, {"train/loss": 1.0})
        w.flush()
    assert len(calls) == 1  # the first flush logged; the others waited for the period
    w.close("finished")
    assert logged_steps(finished_records(w.info["dir"]), "train/loss") == STEPS


def test_resume_continues_the_run_id_in_a_group(tmp_path):
    run_dir = tmp_path / "member-0"
    run_dir.mkdir()
    first = WandbWriter(run_dir, CONFIG, Tracking("offline", group="pop-1"))
    first.write_scalars(10, {"train/loss": 1.0})
    first.close("stopped")
    resumed = WandbWriter(run_dir, CONFIG, Tracking("offline", group="pop-1"), resume=True)
    resumed.write_scalars(20, {"train/loss": 0.5})
    resumed.close()
    folders = sorted((run_dir / "wandb").glob("offline-run-*"))
    run_id = (run_dir / "wandb_id").read_text().strip()
    assert len(folders) == 2 and resumed.info["id"] == first.info["id"] == run_id
    runs = [next(r["run"] for r in finished_records(f) if r.get("type") == "run") for f in folders]
    assert [r["run_id"] for r in runs] == [run_id, run_id]
    assert [r["run_group"] for r in runs] == ["pop-1", "pop-1"]
    assert runs[1].get("resume") is True and not runs[0].get("resume")
    assert [logged_steps(finished_records(f), "train/loss") for f in folders] == [[10], [20]]
    assert resumed.info["sync_command"] == "wandb sync " + " ".join(map(str, folders))


def test_two_runs_in_folders_of_the_same_name_get_different_ids(tmp_path):
    ids = []
    for parent in ("a", "b"):
        run_dir = tmp_path / parent / "k00"
        run_dir.mkdir(parents=True)
        ids.append(init_kwargs(run_dir, None, Tracking())["id"])
    assert ids[0] != ids[1]


def test_resume_refills_the_steps_a_kill_lost(tmp_path):
    """metrics.jsonl holds steps 10..50 (checkpoint at 50) but the killed process's W&B folder only 10..20."""
    (tmp_path / run_folder.RECORDS).write_text(
        "".join(json.dumps({"step": s, "ts": 0.0, "wall": 1.0, "train/loss": 1 / s}) + "\n" for s in range(10, 51, 10))
    )
    first = WandbWriter(tmp_path, CONFIG, Tracking("offline"))
    for step in (10, 20):
        first.write_scalars(step, {"train/loss": 1 / step})
    first.close("stopped")
    resumed = WandbWriter(tmp_path, CONFIG, Tracking("offline"), resume=True, resume_step=50)
    for step in (60, 70):  # the engine replays every step after the checkpoint
        resumed.write_scalars(step, {"train/loss": 1 / step})
        resumed.flush()
    resumed.close()
    folders = sorted((tmp_path / "wandb").glob("offline-run-*"))
    steps = [logged_steps(finished_records(f), "train/loss") for f in folders]
    assert steps == [[10, 20], [30, 40, 50, 60, 70]]
    rows = history(finished_records(folders[1]))
    assert [h["train/loss"] for h in rows[:3]] == pytest.approx([1 / 30, 1 / 40, 1 / 50]), "values from metrics.jsonl"


def test_rows_logged_while_init_is_running_are_kept(tmp_path):
    (tmp_path / run_folder.STATUS).write_text("{}")
    w = WandbWriter(tmp_path, CONFIG, Tracking("offline"))
    assert not w._ready.is_set(), "the constructor returned before wandb.init finished"
    for step in STEPS[:3]:  # training goes on meanwhile; these rows wait for the run
        w.write_scalars(step, {"train/loss": float(step)})
        w.flush()
    w.write_summary({"train/loss": 0.5})
    w.close("finished")
    assert logged_steps(finished_records(w.info["dir"]), "train/loss") == STEPS[:3]
    assert inspect_summary(w.info["dir"])["summary"]["final"]["train/loss"] == 0.5, "the final metrics are kept"
    status = json.loads((tmp_path / run_folder.STATUS).read_text())
    assert status["wandb"]["sync_command"] == f"wandb sync {w.info['dir']}", "info reaches status.json when ready"


@pytest.mark.parametrize(("state", "code"), [("failed", 1), ("diverged", 3)])
def test_failed_runs_finish_with_nonzero_exit_code(tmp_path, state, code):
    w = WandbWriter(tmp_path, CONFIG, Tracking("offline"))
    w.write_scalars(1, {"train/loss": float("nan")})
    w.close(state, "Loss became nan")
    summary = inspect_summary(w.info["dir"])
    assert summary["exit_code"] == code and summary["state"] == "failed"
    assert summary["summary"]["run/message"] == "Loss became nan"


def test_auto_mode_is_offline_without_a_key_and_online_with_one(monkeypatch, tmp_path):
    monkeypatch.delenv("WANDB_MODE")
    assert resolve_mode("auto") == "offline"
    monkeypatch.setenv("WANDB_API_KEY", "x" * 40)
    assert resolve_mode("auto") == "online"
    monkeypatch.delenv("WANDB_API_KEY")
    netrc = tmp_path / "home" / ".netrc"
    netrc.write_text("machine 127.0.0.2:9\n  login user\n  password " + "y" * 40 + "\n")  # `wandb login --host`
    netrc.chmod(0o600)
    assert resolve_mode("auto") == "offline", "credentials for another host do not count"
    netrc.write_text("machine 127.0.0.1:9\n  login user\n  password " + "y" * 40 + "\n")
    assert resolve_mode("auto") == "online", "wandb's own netrc lookup for its configured host (WANDB_BASE_URL)"
    assert resolve_mode("disabled") == "disabled"
    with pytest.raises(ValueError):
        resolve_mode("sometimes")


@pytest.mark.parametrize(
    ("flag", "env_mode", "key", "expected"),
    [
        ("auto", None, False, "offline"),
        ("auto", None, True, "online"),
        ("auto", "offline", True, "offline"),  # W&B's recipe for offline clusters: no network attempt
        ("auto", "disabled", False, "disabled"),
        ("auto", "dryrun", True, "offline"),
        (None, "online", False, "online"),
        ("offline", "online", True, "offline"),  # an explicit --wandb wins over $WANDB_MODE
        ("disabled", "online", True, "disabled"),
        ("online", "disabled", False, "online"),
    ],
)
def test_mode_precedence(monkeypatch, flag, env_mode, key, expected):
    monkeypatch.delenv("WANDB_MODE")
    if env_mode:
        monkeypatch.setenv("WANDB_MODE", env_mode)
    if key:
        monkeypatch.setenv("WANDB_API_KEY", "x" * 40)
    assert resolve_mode(flag) == expected


def test_wandb_environment_variables_are_honoured(tmp_path, monkeypatch):
    monkeypatch.setenv("WANDB_PROJECT", "proj-x")
    monkeypatch.setenv("WANDB_TAGS", "alpha, beta")
    monkeypatch.setenv("WANDB_NOTES", "a note")
    monkeypatch.setenv("WANDB_RUN_GROUP", "grp-env")
    monkeypatch.setenv("WANDB_JOB_TYPE", "custom-job")
    monkeypatch.setenv("WANDB_DIR", str(tmp_path / "wandb_dir"))
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    w = WandbWriter(run_dir, CONFIG, Tracking("offline", group="pop-1", job_type="mnist"))
    w.write_scalars(1, {"train/loss": 1.0})
    w.close()
    assert Path(w.info["dir"]).parent == tmp_path / "wandb_dir" / "wandb", "WANDB_DIR decides where files go"
    summary = inspect_summary(w.info["dir"])
    assert summary["project"] == "proj-x" and summary["notes"] == "a note"
    assert summary["tags"] == ["mnist", "alpha", "beta"]
    (run,) = [r["run"] for r in finished_records(w.info["dir"]) if r.get("type") == "run"]
    assert run["run_group"] == "grp-env" and run["job_type"] == "custom-job"
    assert init_kwargs(run_dir, None, Tracking())["entity"] is None
    monkeypatch.setenv("WANDB_ENTITY", "team-y")
    assert init_kwargs(run_dir, None, Tracking())["entity"] == "team-y"


def test_console_output_and_a_failed_runs_error_reach_the_logs(tmp_path):
    """In a subprocess (wandb wraps the process's stdout/stderr): the Logs tab gets the error line."""
    code = (
        "import sys; from runwriters.base import Tracking; from runwriters.wandb.writer import WandbWriter; "
        "w = WandbWriter(sys.argv[1], {'lr': 0.1}, Tracking('offline')); w.wait_ready(60); "
        "print('hello from training'); print('run failed: boom', file=sys.stderr); "
        "w.close('failed', 'boom'); print(w.info['dir'])"
    )
    root = Path(__file__).resolve().parents[1]
    out = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)], cwd=root, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr[-2000:]
    summary = inspect_summary(out.stdout.strip().splitlines()[-1])
    lines = [c["line"] for c in summary["console"]]
    assert "hello from training" in lines and "run failed: boom" in lines
    assert summary["exit_code"] == 1 and summary["summary"]["run/message"] == "boom"


def test_online_failure_falls_back_to_offline_and_never_raises(tmp_path, monkeypatch):
    monkeypatch.setenv("WANDB_MODE", "online")
    monkeypatch.setenv("WANDB_API_KEY", "x" * 40)  # accepted locally; the server (closed port) never answers
    monkeypatch.setenv("JAXDASH_WANDB_INIT_TIMEOUT", "2")
    t0 = time.monotonic()
    w = WandbWriter(tmp_path, CONFIG, Tracking("online"))
    assert time.monotonic() - t0 < 1.0, "init runs in the background: training never waits for W&B"
    assert w.wait_ready(60) and time.monotonic() - t0 < 30
    assert w.active and w.info["mode"] == "offline" and w.info["error"]
    w.write_scalars(5, {"train/loss": 0.5})
    w.close()
    assert inspect_summary(w.info["dir"])["state"] == "finished"


def test_bad_mode_disables_the_writer_without_raising(tmp_path):
    w = WandbWriter(tmp_path, CONFIG, Tracking("sometimes"))
    assert not w.active and w.info["mode"] == "disabled" and "sometimes" in w.info["error"]
    w.write_scalars(1, {"train/loss": 1.0})
    w.flush()
    w.close()
    assert not (tmp_path / "wandb").exists()


def test_wandb_files_stay_in_the_run_directory_and_wandbs_own_dirs(tmp_path):
    """With the test environment's W&B dirs, nothing lands in $HOME or the working directory."""
    home, cwd, run_dir = tmp_path / "empty_home", tmp_path / "cwd", tmp_path / "run"
    for d in (home, cwd, run_dir):
        d.mkdir()
    code = (
        "import sys; sys.path.insert(0, sys.argv[2]); from runwriters.wandb.writer import WandbWriter; "
        "from runwriters.base import Tracking; "
        "w = WandbWriter(sys.argv[1], {'lr': 0.1}, Tracking('offline')); w.write_scalars(1, {'train/loss': 1.0}); w.close()"
    )
    env = {**os.environ, "HOME": str(home)}
    root = str(Path(__file__).resolve().parents[1])
    out = subprocess.run(
        [sys.executable, "-c", code, str(run_dir), root], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert list((run_dir / "wandb").glob("offline-run-*"))
    assert list(home.iterdir()) == [] and list(cwd.iterdir()) == []


def test_config_records_are_those_wandb_writes_for_the_same_updates(tmp_path):
    """An lr moved once the run exists (PBT's) is one config record, as `run.config.update` makes in W&B itself;
    closing adds none (an empty update would be a config record of no keys, which W&B's own run never has)."""
    import wandb

    def config_records(folder: str) -> list[dict]:
        return [r["config"] for r in finished_records(folder) if r.get("type") == "config"]

    real = wandb.init(project="p", dir=str(tmp_path / "wandb_dir"), mode="offline", config=CONFIG)
    real.config.update({"lr": 0.01}, allow_val_change=True)
    real.finish()
    (tmp_path / "ours").mkdir()
    ours = WandbWriter(tmp_path / "ours", CONFIG, Tracking("offline"))
    assert ours.wait_ready(60), ours.info
    ours.write_hparams({"lr": 0.01})
    ours.close()
    expected = config_records(str(Path(real.dir).parent))
    assert expected == [{"update": {"lr": 0.01}}]
    assert config_records(ours.info["dir"]) == expected
