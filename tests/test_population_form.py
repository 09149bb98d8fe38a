"""Populations from the page (AppTest): the form's K and its errors, a started population watched member by
member on Live, and its rows grouped in the Runs table."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from runstore import launch_files, run_folder, run_store
from tests.apptest_pages import app, dirs, errors_under, fake_population, fake_run, wait_status
from tests.chart_elements import charts, figure, trace_lengths

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
    assert run_store.read_json(launch_dir / run_folder.CONFIG)["name"] == "pop #0 (seed=0 lr=0.001)"


def test_live_shows_every_member_of_a_population(root: Path) -> None:
    reg = fake_population(root, "regression", state="running", pid=os.getpid())
    at = app("views/live.py", run=reg[3].name)
    fit, loss = charts(at)
    assert len(trace_lengths(fit)) == 2 + 6 and len(trace_lengths(loss)) == 6
    assert [b.label for b in at.button] == ["Stop all"]
    mnist = fake_population(root, "mnist", lrs=(0.001, 0.003), seeds=(0,), state="stopped")
    at = app("views/live.py", run=mnist[1].name)
    loss, acc = charts(at)
    assert [t["name"] for t in figure(acc)["data"]] == ["lr=0.001", "lr=0.003"]
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
    # the compare grids (one per prefix): every member plus the single run, for each of the 3 metrics
    assert sum(len(trace_lengths(c)) for c in charts(at) if "compare_section" in c.key) == 7 * 3
