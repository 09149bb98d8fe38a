"""The live panels a task can ask for (config.json "panels"), drawn for one run or a population.

* "fit": the data points (fit/data table) and the model's curve (fit/curve: y, and y_true when
  the task knows the true function), a line or any 1-D curve;
* "loss": train/loss, and test/loss when the task evaluates;
* "accuracy": train/acc, and test/acc, on an axis zoomed to the data.

No task is named here: a user's task gets the same panels by listing them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import streamlit as st

from components import figures
from components.colors import run_color
from dashboard.panels import line_spec, safe_text
from dashboard.panels.panels import TILES_KEY, live_line
from dashboard.panels.run_numbers import COMPILE_TILE, tile_values
from dashboard.reading import provider
from dashboard.reading.provider import MetricTable
from dashboard.server import rows_route
from runstore import tags

LIVE_POINTS = line_spec.LIVE_POINTS  # points per series a spec carries (min/max buckets: spikes kept)
# A fed chart (its browser appends the rows written since its spec) is built anew, downsampled, only once
# this many rows came since its spec was built, its rows doubled or a curve appeared: a rerun meanwhile sends
# the same spec, which the browser does not draw again.
FED_REBUILD_ROWS = LIVE_POINTS
FIT_POINTS = 2000  # a fit's data points drawn (evenly thinned)
TRUE_COLOR = "#7f7f7f"  # the true curve's dashed gray
COMPILE_HELP = "First (compiling) chunk beyond a steady one."


def drawn_kinds(run_dir: Path, kinds: list[str], records: MetricTable) -> list[str]:
    """The panels `draw` shows: a run not of our tasks gets "loss" / "accuracy" only for tags it logged
    (never an empty "Loss: starting…" panel for a client script or a TensorBoard log without train/loss)."""
    if provider.own_task(run_dir):
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
    return tuple(provider.table_stamp(run_dir, tag) for tag in (tags.FIT_DATA, tags.FIT_CURVE))


# A linear fit's parameters, logged with every record (the regression task's own keys): the fit chart's line is
# drawn from the newest record's (w, b) and moved in the browser as records come (line_spec.feed's line), not
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


def _padded(values: list[np.ndarray], frac: float) -> list[float]:
    """[lo, hi] of the finite `values`, padded by `frac` of the span ([-1, 1] without any)."""
    v = np.concatenate([np.asarray(a, dtype=float).ravel() for a in values])
    v = v[np.isfinite(v)]
    if not v.size:
        return [-1.0, 1.0]
    lo, hi = float(v.min()), float(v.max())
    span = hi - lo if hi > lo else max(abs(hi), 1.0)
    return [lo - frac * span, hi + frac * span]


def fit_spec(run_dir: Path, key: str, empty_text: str, color: str | None, model: Any) -> dict[str, Any]:
    """The fit chart's spec: data scatter, the true curve (dashed gray) and the model's curve, on axes fixed by
    the data and the true curve (the model slides over them)."""
    data, _, truth = provider.fit(run_dir)
    if data is None:
        return line_spec.spec(key, "Fit", [], metric="fit", kind="fit", height=420, empty=empty_text)
    x, y = (np.asarray(v, dtype=float).ravel() for v in data)
    keep = np.unique(np.linspace(0, x.size - 1, min(x.size, FIT_POINTS)).round().astype(np.int64)) if x.size else []
    name = f"data ({len(keep):,} of {x.size:,})" if len(keep) < x.size else "data"
    lines = [line_spec.points(name, (x[keep], y[keep]), line_spec.Style("#4c78a8"), mode="points")]
    if truth is not None:
        lines.append(line_spec.points("true", truth, line_spec.Style(TRUE_COLOR, dash=True)))
    if model is not None:
        lines.append(line_spec.points("model", model, line_spec.Style(color)))
    xs, ys = [x] + ([truth[0]] if truth is not None else []), [y] + ([truth[1]] if truth is not None else [])
    ranges = {"x_range": _padded(xs, 0.03), "y_range": _padded(ys, 0.08)}
    return line_spec.spec(key, "Fit", lines, metric="fit", kind="fit", y_title="y", x_title="x", height=420, **ranges)


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
    records move that line in the browser between reruns (line_spec.feed's `line`).
    """
    offset = records.offset if records is not None else 0  # before building, as curves_panel
    lined = records is not None and all(t in records.tags() for t in LINE_TAGS)

    def build() -> dict[str, Any]:
        model = provider.fit(run_dir)[1]
        model = _line_from_records(model, records if lined else None)
        spec = fit_spec(run_dir, key, empty_text, color, model)
        at = next((i for i, s in enumerate(spec["series"]) if s["name"] == "model" and len(s["x"]) == 2), None)
        if feed_run is not None and at is not None:  # no line yet: the page's next spec has it
            line = {"series": at, "x": spec["series"][at]["x"], "w": LINE_TAGS[0], "b": LINE_TAGS[1]}
            spec["feed"] = line_spec.feed(feed_run, offset, {}, line)
        return spec

    fed = feed_run is not None  # fed before its first (w, b) too: a spec built then is not rebuilt for them
    # Fed: built anew only when a table first appears (the data is written once; the feed moves the line, and a
    # spec rebuilt for the curve's table would draw an older line until its feed caught up); else when a
    # table changes, and with each record for a line drawn from them.
    tables = fit_version(run_dir)
    version = (
        tuple(bool(t) for t in tables) if fed else tables,
        empty_text,
        fed,
        offset if lined and not fed else None,
    )
    live_line(key, version, build)


def _run_lines(
    records: MetricTable, tag_list: tuple[str, ...], color: str | None, run: str | None
) -> list[dict[str, Any] | None]:
    """One series per tag of one run, in its colour: train solid, test dashed."""
    t0 = provider.start_time(provider.runs_root() / run) if run else None
    styles = {t: line_spec.Style(color, dash=t.startswith("test/")) for t in tag_list}
    return [line_spec.series(records, t, t, styles[t], run=run, t0=t0) for t in tag_list]


def _run_spec(
    key: str, title: str, lines: list[dict[str, Any] | None], records: MetricTable, run: str | None, **more: Any
) -> dict[str, Any]:
    """A chart of one run's series, with its other scalar keys for the x-axis picker."""
    drawn = tuple(s["tag"] for s in lines if s is not None)
    extra = {"xkeys": line_spec.xkeys(records, drawn), "series_urls": {run: rows_route.series_path(run)}} if run else {}
    return line_spec.spec(key, title, lines, **extra, **more)


@dataclass(frozen=True)
class ChartRun:
    """The run a chart draws: its records, its id (None: records of no run folder; else its other keys are the
    x-axis picker's), its colour, and `fed`: the browser appends its new records between reruns (rows_route)."""

    records: MetricTable
    run: str | None = None
    color: str | None = None
    fed: bool = False

    @property
    def feed_run(self) -> str | None:
        """The run whose new rows the browser appends (None: not fed)."""
        return self.run if self.fed else None


def curves_panel(kind: str, chart: ChartRun, key: str, empty_text: str = "no data yet") -> None:
    """Train (and test) loss, or accuracy ("accuracy": shown as percent, the axis zoomed to the data)."""
    records, color, run, feed_run = chart.records, chart.color, chart.run, chart.feed_run
    accuracy = kind == "accuracy"
    tag_list = (tags.TRAIN_ACC, tags.TEST_ACC) if accuracy else (tags.TRAIN_LOSS, tags.TEST_LOSS)
    offset = records.offset  # before building: a record read meanwhile may come twice, never not at all
    fed = feed_run is not None  # a run the page polls (served with the routes)

    def build() -> dict[str, Any]:
        lines = _run_lines(records, tag_list, color, run)
        more: dict[str, Any] = {"metric": kind, "y_title": kind, "empty": empty_text}
        if accuracy:
            curves = {t: (s["x"], s["y"]) for t, s in zip(tag_list, lines, strict=True) if s is not None}
            more |= {"percent": True, "y_range": figures.zoom_range(curves), "clamp": [0.0, 1.0]}
        shown = {s["tag"]: i for i, s in enumerate(t for t in lines if t is not None)}
        if fed and shown:  # no curve yet: the page's next spec has them
            more["feed"] = line_spec.feed(feed_run, built_at, shown)
        return _run_spec(key, "Accuracy" if accuracy else "Loss", lines, records, run, **more)

    shown = tuple(t for t in tag_list if t in records.tags())
    built_at = _fed_built_at(key, offset, len(records), shown) if fed else offset
    live_line(key, (built_at, empty_text, fed, shown), build)


def key_panel(tag: str, chart: ChartRun, key: str) -> None:
    """One logged scalar's chart (a client script's own key), drawn when scrolled near."""
    records, color, run, feed_run = chart.records, chart.color, chart.run, chart.feed_run
    offset = records.offset  # before building: a record read meanwhile may come twice, never not at all

    def build() -> dict[str, Any]:
        lines = _run_lines(records, (tag,), color, run)
        more: dict[str, Any] = {"metric": tag, "y_title": tag.rsplit("/", 1)[-1], "height": 300}
        if feed_run and lines[0] is not None:
            more["feed"] = line_spec.feed(feed_run, built_at, {tag: 0})
        return _run_spec(key, tag, lines, records, run, **more)

    shown = (tag,) if tag in records.tags() else ()
    built_at = _fed_built_at(key, offset, len(records), shown) if feed_run else offset
    live_line(key, (built_at, feed_run is not None, shown), build, lazy=True)


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


def draw(run_dir: Path, kinds: list[str], chart: ChartRun, status: dict[str, Any], key: str) -> None:
    """A run's panels (in `chart`'s colour, else the run's): a fit large on the left with the others beside it,
    else side by side."""
    empty = waiting_text(status)
    kinds = drawn_kinds(run_dir, kinds, chart.records)
    chart = replace(chart, run=run_dir.name, color=chart.color or run_color(run_dir.name))
    draw_one = {
        "fit": lambda k: fit_panel(run_dir, k, empty, chart.color, chart.records, chart.feed_run),
        "loss": lambda k: curves_panel("loss", chart, k, empty),
        "accuracy": lambda k: curves_panel("accuracy", chart, k, empty),
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
