"""Population-based training on the page: the form's PBT settings, the command, the lr and copy charts.

The form tests stop at the process start (launcher.spawn replaced); the chart tests read a real small
PBT population trained by the CLI; the stop/resume test trains one started and resumed from the page.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from components import pbt_figures
from components.colors import distinct_colors, run_color
from dashboard.forms import pbt_settings
from dashboard.panels import line_spec, member_lines
from dashboard.processes import launcher
from runstore import launch_files, run_folder, run_states, run_store
from runstore.metrics.metric_table import MetricTable
from runstore.run_folder import RunFolder
from settings.config import ConfigError, parse_config
from tests.apptest_pages import app, errors_under, wait_status
from tests.chart_elements import charts
from tests.fixtures_runs import hold_children, wait_held
from training import cli
from training.tasks import load_task

LRS = "0.0001, 0.001, 0.3, 2.0"


@pytest.fixture
def spawned(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """Commands the page would start (no process is started)."""
    cmds: list[list[str]] = []

    def fake_spawn(cmd: list[str], log_path: Path, metrics: Path | None = None) -> dict:
        cmds.append(cmd)
        return {"pid": os.getpid(), "via": "cold"}  # alive: the live page shows it as starting

    monkeypatch.setattr(launcher, "spawn", fake_spawn)
    return cmds


@pytest.fixture(scope="module")
def pbt_population(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """The brief's small PBT population (regression, lrs 1e-4 .. 2.0, copies every 50 of 400 steps), by member."""
    root = tmp_path_factory.mktemp("pbt") / "runs"
    cmd = [sys.executable, "-m", "training", "regression", "--population", "lr=0.0001,0.001,0.3,2.0"]
    cmd += ["--pbt-interval", "50", "--steps", "400", "--runs-root", str(root), "--wandb", "disabled", "--quiet"]
    subprocess.run(cmd, cwd=launcher.REPO_ROOT, check=True, capture_output=True, timeout=300)
    dirs = [p.parent for p in root.glob("*/config.json")]
    return sorted(dirs, key=lambda d: json.loads((d / run_folder.CONFIG).read_text())["member"])


def population_form(at, lrs: str = LRS) -> None:  # noqa: ANN001 - an AppTest
    at.toggle(key="regression_pop_on").set_value(True).run()
    at.text_input(key="regression_pop_lr").input(lrs).run()


# -- the form ------------------------------------------------------------------------------------


def test_pbt_toggle_only_with_two_learning_rates(runs_root: Path) -> None:
    at = app()
    assert all(t.key != "regression_pbt_on" for t in at.toggle)  # no population: no PBT
    population_form(at, "0.01")
    assert all(t.key != "regression_pbt_on" for t in at.toggle)
    assert any("at least two learning rates" in c.value for c in at.caption)
    at.text_input(key="regression_pop_lr").input("0.01, 0.1").run()
    at.toggle(key="regression_pbt_on").set_value(True).run()
    assert at.number_input(key="regression_pbt_interval").label == "Copy every (steps)"
    assert at.selectbox(key="regression_pbt_metric").options == ["Train loss"]
    assert any(c.value.startswith("Every 100 steps the worst of 2 members") for c in at.caption)


def test_pbt_toggle_puts_the_flags_in_the_command(runs_root: Path, spawned: list[list[str]]) -> None:
    at = app()
    population_form(at)
    at.toggle(key="regression_pbt_on").set_value(True).run()
    at.number_input(key="regression_pbt_interval").set_value(50)
    at.number_input(key="regression_pbt_fraction").set_value(0.5)
    at.number_input(key="regression_pbt_resample").set_value(0.1)
    at.number_input(key="regression_steps").set_value(400).run()
    at.form_submit_button[0].click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    (cmd,) = spawned
    flags = cmd[cmd.index("--pbt-interval") :]
    assert flags[:8] == [
        "--pbt-interval",
        "50",
        "--pbt-metric",
        "train/loss",
        "--pbt-fraction",
        "0.5",
        "--pbt-resample",
        "0.1",
    ]
    args = cli.task_parser("regression", load_task("regression")).parse_args(cmd[4:])
    pbt = cli.pbt_config(args, seed=0)
    assert (pbt.interval, pbt.metric, pbt.fraction, pbt.resample) == (50, "train/loss", 0.5, 0.1)
    assert args.population == ["lr=0.0001,0.001,0.3,2.0"]
    (launch,) = runs_root.glob("*/launch.json")
    assert json.loads(launch.read_text())["command"] == cmd


def test_without_pbt_the_command_has_no_pbt_flag(runs_root: Path, spawned: list[list[str]]) -> None:
    at = app()
    population_form(at)
    at.form_submit_button[0].click().run()
    (cmd,) = spawned
    assert not [f for f in cmd if f.startswith("--pbt")]


def test_bad_pbt_settings_show_messages_under_their_fields(runs_root: Path, spawned: list[list[str]]) -> None:
    at = app()
    population_form(at)
    at.toggle(key="regression_pbt_on").set_value(True).run()
    at.number_input(key="regression_pbt_interval").set_value(0)
    at.number_input(key="regression_pbt_fraction").set_value(0.8)
    at.number_input(key="regression_pbt_resample").set_value(1.5).run()
    at.form_submit_button[0].click().run()
    assert errors_under(at, "regression_pbt_interval") == [
        "Copy every (steps) must be a whole number of steps, at least 1."
    ]
    (fraction,) = errors_under(at, "regression_pbt_fraction")
    assert fraction.startswith("Share of members replaced must be more than 0 and at most 0.5")
    assert errors_under(at, "regression_pbt_resample") == [
        "Chance of a fresh learning rate is a probability: 0 to 1 (got 1.5)."
    ]
    at.number_input(key="regression_pbt_interval").set_value(5000).run()  # the default run has 1000 steps
    at.number_input(key="regression_pbt_fraction").set_value(0.25)
    at.number_input(key="regression_pbt_resample").set_value(0.0).run()
    at.form_submit_button[0].click().run()
    (interval,) = errors_under(at, "regression_pbt_interval")
    assert "less than the run's 1000 steps" in interval
    assert not spawned and list(runs_root.iterdir()) == []


def test_check_settings_without_the_page() -> None:
    axes = {"lr": ["0.01", "0.1"]}
    ok = pbt_settings.check({"interval": 20, "metric": "", "fraction": 0.25, "resample": 0}, axes, "mnist")
    assert ok == {"interval": 20, "metric": "test/loss", "fraction": 0.25, "resample": 0.0}
    with pytest.raises(ConfigError) as exc:
        pbt_settings.check({"interval": 20, "metric": "test/acc", "fraction": 0.25}, {"seed": ["0", "1"]}, "regression")
    assert set(exc.value.errors) == {"population", "pbt_metric", "pbt_resample"}


# -- the charts -----------------------------------------------------------------------------------


def test_copy_events_markers_and_lr_spec_are_pure(tmp_path: Path) -> None:
    cols = ["step", "source", "old_lr", "new_lr", "reason"]
    events = pbt_figures.copy_events(
        cols, [[100, 0, 0.01, 0.0125, "ranked low"], ["x", 1, 1, 1, "?"], [40, 2, 2.0, 0.24, "diverged"]]
    )
    assert [e.step for e in events] == [40, 100]
    assert (
        pbt_figures.copy_text(events[1], "lr=0.3") == "step 100: copied member 0 (lr=0.3), ranked low; lr 0.01 → 0.0125"
    )
    curve = (np.array([0, 30, 40, 100, 110]), np.array([5.0, 3.0, np.inf, 1.0, 0.5]))
    assert pbt_figures.value_at(curve, 40) == 3.0 and pbt_figures.value_at(curve, 100) == 1.0
    rows = [
        {"step": s, "wall": w, "pbt/lr": v}
        for s, w, v in [(10, 1, 0.01), (50, 5, 0.01), (100, 10, 0.01), (110, 11, 0.0125)]
    ]
    RunFolder(tmp_path).append_records(rows)
    a = member_lines.Member("a", MetricTable().update(tmp_path), line_spec.Style("#123456"))
    spec = member_lines.lr_spec("k", [a], member_lines.Copies({"a": events}, {0: "lr=0.3"}))
    assert spec["y_log_default"] is True and spec["line_shape"] == "vh"  # log y, drawn as steps
    line, marks = spec["series"]
    assert line["color"] == "#123456" and line["y"] == [0.01, 0.01, 0.01, 0.0125] and line.get("mode") is None
    assert marks["mode"] == "marks" and marks["x"] == [40, 100] and marks["y"] == [0.24, 0.0125]
    assert marks["color"] == "#123456" and marks["wall"] == [1, 10]  # the member's wall time at the copy's step
    assert marks["texts"][1] == "a: step 100: copied member 0 (lr=0.3), ranked low; lr 0.01 → 0.0125"
    assert marks["of"] == "a"  # the marks share their member's legend entry


def lineage_rows(run_dir: Path) -> list[list]:
    path = run_dir / run_folder.ARTIFACTS / run_folder.TABLES / "pbt__lineage.json"
    return json.loads(path.read_text())["rows"] if path.exists() else []


def chart_specs(at) -> dict[str, dict]:  # noqa: ANN001 - an AppTest
    """{title: line spec} of the page's line charts (dashboard/panels/line_spec.py)."""
    specs = [json.loads(c.proto.spec) for c in charts(at)]
    return {s["title"]: s for s in specs if "series" in s}


def lines_and_marks(spec: dict) -> tuple[list[dict], list[dict]]:
    """A line spec's member lines and its copy marks."""
    series = spec["series"]
    return [s for s in series if s.get("mode") != "marks"], [s for s in series if s.get("mode") == "marks"]


def test_population_page_draws_lr_schedules_and_copy_markers(
    pbt_population: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JAXDASH_RUNS", str(pbt_population[0].parent))
    at = app("views/live.py", run=pbt_population[0].name)
    charts = chart_specs(at)
    lr, loss = charts["Learning rate (PBT)"], charts["Train loss"]
    lines, lr_marks = lines_and_marks(lr)
    assert [t["name"] for t in lines] == ["lr=0.0001", "lr=0.001", "lr=0.3", "lr=2"]
    own = distinct_colors([d.name for d in pbt_population])  # each its own colour, moved on where two hash alike
    assert [t["color"] for t in lines] == [own[d.name] for d in pbt_population]
    assert len(set(own.values())) == len(pbt_population)
    assert lr["y_log_default"] is True and lr["line_shape"] == "vh"
    assert loss["y_log_default"] is True  # lr=2 blew up before its rescue: a linear axis flattens the rest
    loss_lines, markers = lines_and_marks(loss)
    assert [t["color"] for t in loss_lines] == [own[d.name] for d in pbt_population]
    copies = sum(len(lineage_rows(d)) for d in pbt_population)
    assert copies > 0
    assert sum(len(t["x"]) for t in markers) == copies  # every copy marked on the loss curves
    colors = {t["name"]: t["color"] for t in lines}
    for marks in (markers, lr_marks):  # a member's marks in its colour, each at its wall time (every x axis)
        assert all(t["color"] == colors[t["name"].removesuffix(" copies")] for t in marks)
        assert all(w is not None for t in marks for w in t["wall"]) and sum(len(t["x"]) for t in marks) == copies
    texts = [s for t in markers for s in t["texts"]]
    assert any("copied member 2 (lr=0.3), diverged; lr 2 → " in s for s in texts), texts  # lr=2 rescued
    assert any(f"{copies} cop" in c.value for c in at.caption)


def test_member_detail_shows_its_lr_and_copies(pbt_population: list[Path], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JAXDASH_RUNS", str(pbt_population[0].parent))
    rescued = pbt_population[3]  # lr=2 diverged and copied member 2 at once
    at = app("views/detail.py", run=rescued.name)
    lr = chart_specs(at)["Learning rate (PBT)"]
    (line,), (marks,) = lines_and_marks(lr)
    assert line["color"] == run_color(rescued.name) and marks["color"] == line["color"]
    assert len(marks["x"]) == len(lineage_rows(rescued)) and lr["y_log_default"] is True
    copies = next(d.value for d in at.dataframe if "copied" in d.value.columns)
    assert len(copies) == len(lineage_rows(rescued)) and copies["why"].iloc[0] == "diverged"
    assert copies["copied"].iloc[0] == "lr=0.3"
    plain = [d for d in pbt_population if not lineage_rows(d)]
    if plain:  # a member that was never copied says so
        at = app("views/detail.py", run=plain[0].name)
        assert any("has not copied another one" in c.value for c in at.caption)


# -- stop and resume -------------------------------------------------------------------------------


def test_stop_all_and_resume_a_pbt_population_from_the_page(
    runs_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hold_children(monkeypatch, tmp_path / "held", chunks=12)  # past two PBT steps, it waits for the stop
    cfg = parse_config("regression", {"steps": 4_000, "log_every": 100, "ckpt_every": 1_000})
    pbt = {"interval": 500, "metric": "train/loss", "fraction": 0.25, "resample": 0.0}
    axes = {"lr": ["0.0001", "0.001", "0.01", "0.1"]}
    population = launcher.Population(axes, pbt)
    launch_dir = launcher.launch_population("regression", cfg, population, name="pbt-stop", wandb_mode="disabled")
    deadline = time.monotonic() + 120
    while len(members := sorted(runs_root.glob("*-m?-*"))) < 4 and time.monotonic() < deadline:
        time.sleep(0.2)
    wait_held(None, tmp_path / "held")
    for d in members:
        wait_status(d, ("running",), min_step=1000)
    at = app("views/live.py", run=members[0].name)
    assert at.button(key="stop_run").label == "Stop all"
    at.button(key="stop_run").click().run()
    stopped = [wait_status(d, ("stopped", "finished", "failed", "crashed"), timeout=60) for d in members]
    assert {s["state"] for s in stopped} == {"stopped"}, stopped
    at = app("views/live.py", run=members[2].name)  # resume from any member: the whole population goes on
    assert at.button(key="resume_run").label.startswith("Resume lr=")
    at.button(key="resume_run").click().run()
    assert not at.exception
    (resumed,) = [
        launch_files.launch_info(d)["resume"]["pid"] for d in members if "resume" in launch_files.launch_info(d)
    ]
    deadline = time.monotonic() + 120
    while {RunFolder(d).status().get("pid") for d in members} != {resumed} and time.monotonic() < deadline:
        time.sleep(0.2)  # one process takes over every member
    finals = [wait_status(d, ("finished", "failed", "crashed", "diverged", "stopped"), timeout=240) for d in members]
    assert {s["state"] for s in finals} == {"finished"}, finals
    for d in members:
        steps = [r["step"] for r in RunFolder(d).records()[0]]
        assert steps == sorted(set(steps)) and steps[-1] == 4_000  # continued, nothing logged twice
        rows = lineage_rows(d)
        assert [r[0] for r in rows] == sorted({r[0] for r in rows})  # each copy recorded once, in order
    # PBT went on after the resume: every member logs its lr to the end (copies stop once members converge).
    assert all("pbt/lr" in RunFolder(d).records()[0][-1] for d in members)
    at = app("views/live.py", run=members[0].name)
    assert "Learning rate (PBT)" in chart_specs(at) and launch_dir in members  # the launch folder is member 0's


# -- in a real browser ----------------------------------------------------------------------------

LR_CHART = "el.__chart && el.__chart.spec.title === 'Learning rate (PBT)'"
# With EMA smoothing on: every member line is smoothed (its raw values kept behind) and every copy mark is drawn
# at its own value, as the spec holds it.
EMA_KEEPS_MARKS = """(() => { const c = (CHART).__chart, same = (a, b) => JSON.stringify(a) === JSON.stringify(b);
  return c.settings.smooth === 'ema' && c.data.some((s) => s.mode === 'marks') && c.data.every((s) => s.mode === 'marks'
    ? s.raw === null && same(s.y, c.spec.series.find((t) => t.name === s.name).y) : s.raw !== null); })()"""


@pytest.mark.browser
def test_start_a_pbt_population_from_the_page_and_see_its_lr_chart(server: tuple, tab: Any, tmp_path: Path) -> None:
    srv, runs = server
    try:
        page = tab
        page.set_viewport_size({"width": 1400, "height": 2000})
        page.goto(srv.url)
        page.get_by_role("button", name="Start run").wait_for(timeout=60_000)
        page.get_by_text("Population: train several variants at once").click()
        lrs = page.get_by_role("textbox", name="Learning rates")
        lrs.fill(LRS)
        lrs.press("Enter")
        page.get_by_text("Population-based training: the worst").click()
        interval = page.get_by_role("spinbutton", name="Copy every (steps)")
        interval.fill("200")
        interval.press("Enter")
        page.get_by_text("Every 200 steps the worst of 4 members").wait_for(timeout=30_000)
        page.get_by_role("spinbutton", name="Steps", exact=True).fill("6000")
        page.get_by_role("button", name="Start population (4 runs)").click()
        page.wait_for_url("**/live?run=*", timeout=30_000)
        page.get_by_text("Learning rate (PBT)").first.wait_for(timeout=120_000)
        page.get_by_text("copies so far").first.wait_for(timeout=120_000)
        lines_js = (  # points of each member's line the lr chart drew (the chart engine's drawn data)
            "Array.from(document.querySelectorAll('.jaxdash-line'))"
            ".filter(el => el.__chart && el.__chart.spec.title === 'Learning rate (PBT)')"
            ".flatMap(el => el.__chart.data.filter(s => s.mode === 'lines').map(s => s.y.filter(v => v !== null).length))"
        )
        page.wait_for_function(f"(() => {{ const n = {lines_js}; return n.length === 4 && n.every(k => k > 1); }})()")
        lr_chart = f"Array.from(document.querySelectorAll('.jaxdash-line')).find(el => {LR_CHART})"
        page.wait_for_function(  # a copy marked (lr=2 diverges before the first PBT step and is rescued there)
            f"(() => ({lr_chart}).__chart.data.some(s => s.mode === 'marks' && s.x.length > 0))()", timeout=120_000
        )
        look = "(() => { const c = (%s).__chart; return [c.settings.logY, c.plot.scales.y.distr, c.plot.series[1].paths.shape]; })()"
        assert page.evaluate(look % lr_chart) == [True, 3, "vh"]  # the chart's own log y default, drawn as steps
        page.locator(
            f".jaxdash-line:has(.jaxdash-line-title:text-is('{member_lines.LR_TITLE}')) .jaxdash-smooth"
        ).select_option("ema")
        page.wait_for_function(EMA_KEEPS_MARKS.replace("CHART", lr_chart), timeout=30_000)
        # The legend: one entry per member, not one for its copies or its raw line too (both share its entry).
        legend = f"Array.from(({lr_chart}).querySelectorAll('.u-legend .u-series')).slice(1)"  # row 0: the x axis
        shown = page.evaluate(
            f"() => {legend}.filter((r) => r.offsetParent).map((r) => r.querySelector('.u-label').textContent)"
        )
        assert shown == ["lr=0.0001", "lr=0.001", "lr=0.3", "lr=2"], shown
        page.evaluate("() => localStorage.clear()")  # the chart's settings are the browser's: none for the next test
        page.screenshot(path=str(tmp_path / "pbt_live.png"), full_page=True)
    finally:
        for run_dir in run_store.run_folders(runs):
            RunFolder(run_dir).request_stop()  # the population is seen: its 6000 steps need not run on
        for run_dir in run_store.run_folders(runs):  # ended before the shared server's runs root is emptied
            if RunFolder(run_dir).status():
                wait_status(run_dir, run_states.ENDED, timeout=60)
    (config,) = [json.loads(p.read_text()) for p in runs.glob("*-m0-*/config.json")]
    assert config["pbt"]["interval"] == 200 and config["pbt"]["metric"] == "train/loss"
