"""The live panels a task can ask for (config.json "panels"), drawn for one run or a population.

* "fit": the data points (fit/data table) and the model's curve (fit/curve: y, and y_true when
  the task knows the true function), a line or any 1-D curve;
* "loss": train/loss, and test/loss when the task evaluates;
* "accuracy": train/acc, and test/acc, on an axis zoomed to the data.

No task is named here: a user's task gets the same panels by listing them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import streamlit as st

from components import figures
from components.colors import run_color
from dashboard.panels import safe_text
from dashboard.panels.chart_feed import line_feed, rows_feed
from dashboard.panels.panels import TILES_KEY, live_chart
from dashboard.panels.run_numbers import COMPILE_TILE, tile_values
from runstore import artifacts, tags
from runstore.metrics.metric_table import MetricTable
from runstore.run_folder import RunFolder

# Points per curve on a live chart (min/max buckets: spikes kept): ~1 per pixel of a half-page chart.
# Each refresh sends and redraws them all (the page_cost benchmark measures what that costs training).
LIVE_POINTS = 800
# A fed chart (its browser appends the rows written since its figure) is built anew, downsampled, only
# once this many rows came since its figure was built, its rows doubled (a short curve's style, points
# shown, changes with its length) or a curve appeared: a rerun meanwhile sends the same figure, which
# the browser does not draw again (two charts' Plotly.react every 10 s was a third of a Live page's
# redraws; an appended row costs a redraw no more than a rebuilt one).
FED_REBUILD_ROWS = LIVE_POINTS
COMPILE_HELP = "First (compiling) chunk beyond a steady one."


def own_task(run_dir: Path) -> bool:
    """True for a run of one of our tasks (its config.json lists its "panels", or the page launched it): texts
    about confusion matrices, compile time and process output apply to it, not to client or TensorBoard runs."""
    return bool(artifacts.config_doc(run_dir).get("panels")) or RunFolder(run_dir).has_launch()


def drawn_kinds(run_dir: Path, kinds: list[str], records: MetricTable) -> list[str]:
    """The panels `draw` shows: a run not of our tasks gets "loss" / "accuracy" only for tags it logged
    (never an empty "Loss: starting…" panel for a client script or a TensorBoard log without train/loss)."""
    if own_task(run_dir):
        return kinds
    logged = records.tags()
    needs = {"loss": (tags.TRAIN_LOSS, "test/loss"), "accuracy": (tags.TRAIN_ACC, "test/acc")}
    return [k for k in kinds if k not in needs or any(t in logged for t in needs[k])]


def waiting_text(status: dict[str, Any]) -> str:
    """What an empty chart says: the run's phase ("loading data…", "compiling…") while it has no point yet."""
    phase = status.get("phase")
    if status.get("state") == "queued":
        return f"queued: #{status.get('position', '?')} in the run queue…"
    if status.get("state") in ("starting", "running"):
        return f"{phase}…" if isinstance(phase, str) and phase != "training" else "starting…"
    return "no data"


def metric_tiles(records: MetricTable, status: dict[str, Any]) -> None:
    """The latest value of each headline metric (accuracies in percent) and the compile time."""
    values = tile_values(records, status)
    if not values:
        return  # nothing logged yet, no compile time: no empty row
    row = st.container(key=TILES_KEY).columns(len(values))
    for col, (label, text) in zip(row, values.items(), strict=True):
        col.metric(safe_text.md(label), text, help=COMPILE_HELP if label == COMPILE_TILE else None)


def fit_version(run_dir: Path) -> tuple[int, ...]:
    """What a fit chart depends on: the modification times of its two tables (0 while missing)."""
    out = []
    for tag in (tags.FIT_DATA, tags.FIT_CURVE):
        try:
            out.append(artifacts.table_path(run_dir, tag).stat().st_mtime_ns)
        except OSError:
            out.append(0)
    return tuple(out)


# A linear fit's parameters, logged with every record (the regression task's own keys): the fit chart's line is
# drawn from the newest record's (w, b) and moved in the browser as records come (chart_feed.line_feed), not
# only when the fit's table is written anew (~12 times a run).
LINE_TAGS = ("regression/weight", "regression/bias")


def _line_from_records(model: Any, records: MetricTable | None) -> Any:
    """The model curve: the newest record's line y = w x + b over the curve's x ends when the records hold
    (w, b) and the curve is a line (two points), else the table's curve."""
    if model is None or records is None or len(model[0]) != 2:
        return model
    w, b = (records.last(t) for t in LINE_TAGS)
    if w is None or b is None:
        return model
    x = np.asarray(model[0], dtype=float)
    return x, w * x + b


def fit_panel(
    run_dir: Path,
    key: str,
    empty_text: str = "no data yet",
    color: str | None = None,
    records: MetricTable | None = None,
    feed_run: str | None = None,
) -> None:
    """Data scatter, true curve and the model's latest curve (in the run's colour).

    records: the run's records, whose newest (w, b) (LINE_TAGS) draws a line fit; feed_run: the run whose new
    records move that line in the browser between reruns (chart_feed.line_feed).
    """
    offset = records.offset if records is not None else 0  # before building, as curves_panel
    lined = records is not None and all(t in records.tags() for t in LINE_TAGS)

    def build() -> Any:
        data, model, truth = artifacts.fit(run_dir)
        model = _line_from_records(model, records if lined else None)
        curves = {"model": model} if model is not None else {}
        colors = {"model": color} if color else None
        return figures.fit_figure(data, curves, truth, uirevision=key, empty_text=empty_text, colors=colors)

    def feed(fig: Any) -> dict[str, Any] | None:
        trace = next((i for i, t in enumerate(fig.data) if t.name == "model" and len(t.x) == 2), None)
        if trace is None:
            return None  # no line yet: the page's next figure has it
        return line_feed(feed_run, offset, trace, [float(v) for v in fig.data[trace].x], *LINE_TAGS)

    fed = feed_run is not None  # fed before its first (w, b) too: a figure built then is not rebuilt for them
    # Fed: built anew only when a table first appears (the data is written once; the feed moves the line, and a
    # figure rebuilt for the curve's table would draw an older line until its feed caught up); else when a
    # table changes, and with each record for a line drawn from them.
    tables = fit_version(run_dir)
    version = (
        tuple(bool(t) for t in tables) if fed else tables,
        empty_text,
        fed,
        offset if lined and not fed else None,
    )
    live_chart(key, version, build, feed if fed else None)


def _curves(records: MetricTable, tag_list: tuple[str, ...], x: str) -> dict[str, Any]:
    curves = {t: records.series(t, x) for t in tag_list}
    return {t: v for t, v in curves.items() if v[0].size}


def _run_style(tag_list: tuple[str, ...], color: str | None) -> dict[str, Any]:
    """One run, one colour: train solid, test dashed, both in the run's colour."""
    if color is None:
        return {}
    return {"colors": dict.fromkeys(tag_list, color), "dashes": {t: "dash" for t in tag_list if t.startswith("test/")}}


def curves_panel(
    kind: str,
    records: MetricTable,
    key: str,
    x: str = "step",
    empty_text: str = "no data yet",
    color: str | None = None,
    feed_run: str | None = None,
) -> None:
    """Train (and test) loss, or accuracy ("accuracy": the axis zoomed to the data).

    feed_run: the run whose new rows the browser appends between reruns (rows_route), for a step axis.
    """
    accuracy = kind == "accuracy"
    tag_list = (tags.TRAIN_ACC, tags.TEST_ACC) if accuracy else (tags.TRAIN_LOSS, tags.TEST_LOSS)
    offset = records.offset  # before building: a record read meanwhile may come twice, never not at all
    fed = feed_run is not None and x == "step"  # feed_run: a run the page polls (served with the routes)

    def build() -> Any:
        curves = _curves(records, tag_list, x)
        style = {"x_title": x, "uirevision": key, "empty_text": empty_text, **_run_style(tag_list, color)}
        if accuracy:
            return figures.accuracy_figure(curves, max_points=LIVE_POINTS, **style)
        return figures.curves_figure(curves, "Loss", "loss", max_points=LIVE_POINTS, **style)

    shown = tuple(t for t in tag_list if t in records.tags())
    built_at = _fed_built_at(key, offset, len(records), shown) if fed else offset
    feed = rows_feed(feed_run, built_at, tag_list, [0.0, 1.0] if accuracy else None) if fed else None
    live_chart(key, (built_at, x, empty_text, fed, shown), build, feed)


def key_panel(tag: str, records: MetricTable, key: str, color: str | None = None, feed_run: str | None = None) -> None:
    """One logged scalar's chart against the step (a client script's own key), drawn when scrolled near.

    feed_run: the run whose new rows the browser appends between reruns (rows_route), as `curves_panel`.
    """
    tag_list = (tag,)
    offset = records.offset  # before building: a record read meanwhile may come twice, never not at all

    def build() -> Any:
        style = {"uirevision": key, "height": 260, "max_points": LIVE_POINTS, **_run_style(tag_list, color)}
        return figures.curves_figure(_curves(records, tag_list, "step"), tag, tag.rsplit("/", 1)[-1], **style)

    shown = tag_list if tag in records.tags() else ()
    built_at = _fed_built_at(key, offset, len(records), shown) if feed_run else offset
    feed = rows_feed(feed_run, built_at, tag_list, None) if feed_run else None
    live_chart(key, (built_at, feed_run is not None, shown), build, feed, lazy=True)


def _fed_built_at(key: str, offset: int, rows: int, shown: tuple[str, ...]) -> int:
    """The offset a fed chart's figure stands for: that of its last build, until FED_REBUILD_ROWS rows came
    since, its rows doubled, a curve appeared, or the file was replaced (a smaller offset); then `offset`
    (built anew)."""
    built = st.session_state.setdefault("_fed_built", {})
    last = built.get(key)
    grew = last is None or rows - last[1] >= FED_REBUILD_ROWS or rows >= 2 * last[1]
    if not grew and last[2] == shown and last[0] <= offset:
        return last[0]
    built[key] = (offset, rows, shown)
    return offset


def draw(
    run_dir: Path,
    kinds: list[str],
    records: MetricTable,
    status: dict[str, Any],
    key: str,
    color: str | None = None,
    fed: bool = False,
) -> None:
    """A run's panels (in the run's colour): a fit large on the left with the others beside it, else side by side.

    fed: the browser appends the run's new records to its curves between reruns (`curves_panel`).
    """
    empty = waiting_text(status)
    kinds = drawn_kinds(run_dir, kinds, records)
    color = color or run_color(run_dir.name)
    feed_run = run_dir.name if fed else None
    draw_one = {
        "fit": lambda k: fit_panel(run_dir, k, empty, color, records, feed_run),
        "loss": lambda k: curves_panel("loss", records, k, empty_text=empty, color=color, feed_run=feed_run),
        "accuracy": lambda k: curves_panel("accuracy", records, k, empty_text=empty, color=color, feed_run=feed_run),
    }
    kinds = [k for k in kinds if k in draw_one]
    if "fit" in kinds and len(kinds) > 1:
        left, right = st.columns([3, 2])
        with right:  # the small metric charts first: a starting run's first loss point is not held up by the fit
            for kind in kinds:
                if kind != "fit":
                    draw_one[kind](f"{key}_{kind}")
        with left:
            draw_one["fit"](f"{key}_fit")
        return
    for col, kind in zip(st.columns(max(1, len(kinds))), kinds, strict=False):
        with col:
            draw_one[kind](f"{key}_{kind}")
