"""Runs table: filters, search, sortable final metrics; name, tags and notes saved with the run (TB text, W&B)."""

from __future__ import annotations

import os
import time
from pathlib import Path

from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from dashboard.processes import notes_sinks
from runstore import run_folder, run_log, run_notes, run_store
from runstore.run_folder import RunFolder
from tests.apptest_pages import app, fake_run
from tests.chart_elements import charts, figure


def test_notes_are_saved_atomically_and_shown_as_tensorboard_text(tmp_path: Path) -> None:
    logdir = tmp_path / run_folder.TENSORBOARD / "run"
    logdir.mkdir(parents=True)
    status = {"tensorboard": {"logdir": str(logdir)}, "wandb": {"mode": "offline"}}
    saved = notes_sinks.save(tmp_path, " best ", ["baseline", "Baseline", "lr, sweep"], "looks good", status)
    assert saved.tags == ["baseline", "lr", "sweep"] and saved.display_name == "best"
    again = run_notes.load(tmp_path)  # what a reload reads
    assert (again.display_name, again.tags, again.notes) == ("best", ["baseline", "lr", "sweep"], "looks good")
    assert "offline" in again.sent["wandb"] and str(logdir) in again.sent["tensorboard"]
    notes_sinks.save(tmp_path, "best", ["x"], "second save", status)
    assert len(list(logdir.glob("*.notes"))) == 1  # one notes file: the latest
    acc = EventAccumulator(str(logdir), size_guidance={"tensors": 0})
    acc.Reload()
    (event,) = acc.Tensors("notes/text_summary")
    assert b"second save" in event.tensor_proto.string_val[0]


def test_wandb_online_is_sent_offline_and_disabled_are_explained() -> None:
    online = {"wandb": {"mode": "online", "url": "https://wandb.ai/me/proj/runs/abc123"}}
    assert notes_sinks.wandb_plan(online).startswith("sending")
    assert "wandb sync" in notes_sinks.wandb_plan({"wandb": {"mode": "offline"}})
    assert "not used" in notes_sinks.wandb_plan({})


def test_log_tail_keeps_the_last_lines_and_what_a_progress_bar_shows(tmp_path: Path) -> None:
    assert run_log.tail(tmp_path) is None
    (tmp_path / run_folder.LOG).write_text("".join(f"line {i}\n" for i in range(5000)) + "10%\r50%\r100%\n")
    text = run_log.tail(tmp_path, lines=3)
    assert text.splitlines() == ["line 4998", "line 4999", "100%"]


def test_filters_search_and_final_metric_columns(runs_root: Path) -> None:
    fake_run(runs_root, "regression", "finished", name="alpha")
    fake_run(runs_root, "mnist", "diverged", name="beta", message="nan")
    tagged = fake_run(runs_root, "mnist", "finished", name="gamma", config={"lr": 0.0042})
    notes_sinks.save(tagged, "", ["keep"], "", {})
    at = app("views/runs.py")
    df = at.dataframe[0].value
    assert {"final train/loss", "final test/acc"} <= set(df.columns) and len(df) == 3
    at.multiselect(key="runs_filter_states").set_value(["finished"]).run()
    assert set(at.dataframe[0].value["name"]) == {"alpha", "gamma"}
    at.multiselect(key="runs_filter_tags").set_value(["keep"]).run()
    assert list(at.dataframe[0].value["name"]) == ["gamma"]
    at.multiselect(key="runs_filter_tags").set_value([]).run()
    at.multiselect(key="runs_filter_states").set_value([]).run()
    at.text_input(key="runs_search").set_value("0.0042").run()  # a setting's value
    assert list(at.dataframe[0].value["name"]) == ["gamma"]
    at.text_input(key="runs_search").set_value("mnist beta").run()
    assert list(at.dataframe[0].value["name"]) == ["beta"]


def test_name_tags_and_notes_edited_on_the_page_survive_a_reload(runs_root: Path) -> None:
    d = fake_run(runs_root, "regression", "finished", name="plain")
    at = app("views/runs.py", selected_ids=[d.name])
    at.text_input(key="notes_name").set_value("the good one")
    at.multiselect(key="notes_tags").set_value(["keeper"])
    at.text_area(key="notes_text").set_value("lr looks right")
    at.button[[b.label for b in at.button].index("Save")].click().run()
    assert not at.exception
    fresh = app("views/runs.py")  # a reload or a second tab
    row = fresh.dataframe[0].value.iloc[0]
    assert row["name"] == "the good one" and list(row["tags"]) == ["keeper"]
    assert run_notes.load(d).notes == "lr looks right"
    assert run_store.read_json(d / run_folder.CONFIG)["name"] == "plain"  # the training process's file is untouched


def test_detail_shows_process_output_and_system_metrics(runs_root: Path) -> None:
    d = fake_run(runs_root, "regression", "running", pid=os.getpid(), name="sys")
    recs = [
        {"step": 600 + i, "wall": 60.0 + i, "ts": time.time(), "sys/cpu_percent": 90.0, "sys/rss_mb": 512.0}
        for i in range(3)
    ]
    RunFolder(d).append_records(recs)
    (d / run_folder.LOG).write_text("Compiling…\nstep 100 loss 0.3\n")
    at = app("views/detail.py", run=d.name)
    assert any("step 100 loss 0.3" in c.value for c in at.code), (
        [e.value for e in at.error],
        [c.value for c in at.code],
    )
    titles = [[a.get("text") for a in figure(c)["layout"].get("annotations", [])] for c in charts(at)]
    assert ["sys/cpu_percent", "sys/rss_mb"] in titles  # the system grid


def test_detail_draws_an_ended_runs_output_and_config_only_when_opened(runs_root: Path) -> None:
    d = fake_run(runs_root, "regression", "finished", name="ended")
    (d / run_folder.LOG).write_text("Compiling…\nstep 100 loss 0.3\n")
    at = app("views/detail.py", run=d.name)
    assert not at.code and len(at.dataframe) == 0  # closed: nothing read or sent
    at.session_state["process_output"] = True
    at.session_state["detail_config"] = True
    at.run()
    assert any("step 100 loss 0.3" in c.value for c in at.code)
    assert "lr" in list(at.dataframe[0].value["setting"]) and not at.exception
