"""Fast checks behind the Live page: the run watcher, numbers that agree, zoomed accuracy, one colour per run."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from benchmarks.browser_probes import blink_report
from components import figures
from components.chart_look import CurveLook, Frame
from components.colors import run_color
from components.series import progress_text
from dashboard.processes import warm_workers as worker
from runstore import run_watch
from runstore.run_folder import RunFolder


def _run(root: Path, name: str, state: str, pid: int | None = None) -> Path:
    d = root / name
    d.mkdir()
    RunFolder(d).write_status(state=state, pid=pid or os.getpid(), started=time.time())
    return d


def test_run_watch_signature_follows_new_ended_and_deleted_runs(tmp_path: Path) -> None:
    assert run_watch.signature(tmp_path) == ()
    d = _run(tmp_path, "a", "running")
    assert run_watch.signature(tmp_path) == (("a", True),)
    RunFolder(d).write_status(state="finished", ended=time.time())
    assert run_watch.signature(tmp_path) == (("a", False),)
    _run(tmp_path, "b", "running", pid=2**22 + 12345)  # no such process: crashed, not active
    assert run_watch.signature(tmp_path) == (("a", False), ("b", False))
    (tmp_path / ".hidden").mkdir()
    for f in d.iterdir():
        f.unlink()
    d.rmdir()
    assert run_watch.signature(tmp_path) == (("b", False),)


def test_steps_per_second_eta_and_took_agree() -> None:
    # 2,000 of 10,000 steps after 4 s, 1 s of it compiling: 2,000 / 3 s = 667 steps/s end to end,
    # so 8,000 steps take 12 s more and the run takes about 16 s in all.
    running = {"state": "running", "step": 2000, "total_steps": 10_000, "wall_seconds": 4.0, "compile_seconds": 1.0}
    text = progress_text({**running, "steps_per_sec": 20_000})
    assert "667 steps/s (compute 20,000/s)" in text and "ETA 12 s" in text
    done = progress_text({**running, "state": "finished", "step": 10_000, "wall_seconds": 16.0})
    assert "took 16 s" in done and "ETA" not in done


def test_accuracy_axis_zooms_past_the_untrained_start() -> None:
    x = np.arange(100.0)
    y = np.r_[0.1, np.linspace(0.83, 0.88, 99)]  # step 0 at chance, then 83-88%
    lo, hi = figures.zoom_range({"train/acc": (x, y)})
    assert 0.8 < lo < 0.83 and 0.88 < hi < 0.9


def test_one_run_one_colour_train_solid_test_dashed() -> None:
    color = run_color("20261123-run-a")
    curves = {"train/loss": (np.arange(3.0), np.ones(3)), "test/loss": (np.arange(3.0), np.ones(3))}
    look = CurveLook(
        colors=dict.fromkeys(curves, color),
        dashes={"test/loss": "dash"},
        full_names={"train/loss": "my run: train/loss"},
    )
    fig = figures.curves_figure(curves, Frame("Loss", "loss"), look)
    assert {t.line.color for t in fig.data} == {color}
    assert [t.line.dash for t in fig.data] == [None, "dash"]
    assert "my run: train/loss" in fig.data[0].hovertemplate


def _child_niceness(env: dict[str, str]) -> int:
    """The niceness a training child started with `env` ends up at, after its own start-up call."""
    code = "import os; from training.runs.warm_worker import share_the_machine; share_the_machine(); print(os.nice(0))"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    return int(out.stdout.strip()) - os.nice(0)


def test_page_started_training_runs_below_the_page(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("JAXDASH_NICE", raising=False)
    assert _child_niceness(worker.child_env()) == int(worker.DEFAULT_NICE)
    monkeypatch.setenv("JAXDASH_NICE", "0")
    assert _child_niceness(worker.child_env()) == 0


def test_blink_report_counts_faded_blank_and_missing_charts() -> None:
    ok = [1.0, 600, 360, 500, True, 10]
    samples = [[t, [ok, ok]] for t in range(0, 1000, 100)]
    samples[5] = [500, [ok, [0.33, 600, 360, 500, True, 10]]]  # one chart faded
    samples[6] = [600, [ok]]  # one chart gone
    samples[7] = [700, [ok, [1.0, 600, 360, 500, False, 0]]]  # one chart blank
    report = blink_report(samples)
    assert (report.charts, report.samples, report.faded, report.missing) == (2, 10, 1, 2)
    assert report.fraction == 3 / 20


def test_live_charts_plotly_bundle_is_the_plotly_packages_version() -> None:
    """The vendored basic bundle draws figures the plotly package writes: the same plotly.js version."""
    from plotly.offline import get_plotlyjs_version

    from dashboard.panels import inplace_chart

    header = (inplace_chart.VENDOR / "plotly-basic.min.js").read_text()[:200]
    assert f"plotly.js (basic - minified) v{get_plotlyjs_version()}" in header


def test_run_detail_builds_a_training_runs_metric_grids_anew_every_30_s_and_every_run_once_it_ended(
    runs_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """run_sections.GRID_REFRESH_S on a fake clock (the page's live_chart reads time.monotonic): Run detail's
    reruns while its run trains send the grids kept, until they are 30 s old; once it ended, each run builds them.
    End to end in Chromium: test_live_feed.py::test_run_detail_redraws_a_training_run_grids_only_every_30_s_or_when_it_ends."""
    from types import SimpleNamespace

    from components import compare_figures
    from dashboard.panels import panels
    from tests.apptest_pages import app, fake_run

    monkeypatch.setenv("JAXDASH_WARM_WORKER", "0")
    now = [1000.0]
    monkeypatch.setattr(panels, "time", SimpleNamespace(monotonic=lambda: now[0], time=time.time))
    built = []
    grid = compare_figures.metric_grid
    monkeypatch.setattr(compare_figures, "metric_grid", lambda *a, **k: built.append(now[0]) or grid(*a, **k))
    run = fake_run(runs_root, "regression", "running", pid=os.getpid())
    at = app("views/detail.py", run=run.name)
    first = len(built)
    assert first >= 1, "no metric grid built"
    for later in (10.0, 29.0):  # reruns while it trains: the grids kept
        now[0] = 1000.0 + later
        at.run()
        assert len(built) == first, f"the grids were built anew {later:.0f} s after the last build"
    now[0] = 1031.0
    at.run()
    assert len(built) == 2 * first  # 30 s old: built anew
    RunFolder(run).write_status(state="finished", ended=time.time())
    for _ in range(2):  # it ended: every run builds them (max_age 0)
        at.run()
    assert len(built) == 4 * first


def test_a_populations_members_have_one_colour_each_in_every_chart_of_live(runs_root: Path) -> None:
    """On a population's Live page, a member's line in the engine's loss chart has the colour of its line in
    the population's fit chart (plotly), and no two members share one."""
    from tests.apptest_pages import app, fake_population
    from tests.chart_elements import charts, figure

    pop = fake_population(runs_root, "regression")
    at = app("views/live.py", run=pop[0].name)
    specs = {figure(c)["layout"]["title"]["text"]: figure(c) for c in charts(at)}
    fit = next(s for title, s in specs.items() if title.startswith("Fits of"))
    loss = specs["Train loss"]
    fit_colors = {t["name"]: t["line"]["color"] for t in fit["data"] if t["name"] not in ("data", "true")}
    loss_colors = {t["name"]: t["line"]["color"] for t in loss["data"]}
    assert loss_colors == fit_colors and len(set(loss_colors.values())) == len(pop)
