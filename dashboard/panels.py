"""Panels shared by the Live and Run detail pages: compute series, then draw them.

Each panel takes what was read from the run store (status, config, records)
and draws; nothing here writes to the run directory.
"""

from __future__ import annotations

import functools
import logging
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import streamlit as st

from components import figures
from dashboard import launcher, state
from dashboard.metric_table import MetricTable
from training import run_store

log = logging.getLogger(__name__)
PLOT_CONFIG = {"displaylogo": False, "modeBarButtonsToRemove": ["lasso2d", "select2d"]}
PROBLEM_STATES = ("failed", "diverged", "crashed", "damaged")


def guarded(fn: Callable[..., None]) -> Callable[..., None]:
    """Run `fn`; an unexpected error becomes one st.error line (traceback to the server log, never the page)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> None:
        try:
            fn(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - the page shows a message, the log keeps the traceback
            log.exception("dashboard error in %s", fn.__name__)
            st.error(f"Something went wrong: {type(exc).__name__}: {exc}", icon=":material/error:")

    return wrapper


def pick_run(runs: list[run_store.RunInfo]) -> run_store.RunInfo | None:
    """Run selector; defaults to ?run=, else the newest active run."""
    current = state.select_run(runs)
    if current is None:
        return None
    by_id = {r.run_id: r for r in runs}
    chosen = st.selectbox(
        "Run",
        list(by_id),
        index=list(by_id).index(current.run_id),
        format_func=lambda i: f"{by_id[i].name}  ·  {by_id[i].task}  ·  {i}",
    )
    state.remember_run(chosen)
    return by_id[chosen]


def key_config(task: str, c: dict[str, Any]) -> str:
    """The few settings that tell runs of a task apart, in one line ("" for an unknown config)."""
    if not c:
        return ""

    def g(k: str) -> str:
        v = c.get(k)
        return f"{v:g}" if isinstance(v, float) else str(v)

    if task == "regression":
        return f"{g('optimizer')} lr={g('lr')} steps={g('steps')} points={g('points')}"
    hidden = "x".join(str(h) for h in c.get("hidden") or [])
    limit = f" n={c['train_limit']}" if c.get("train_limit") else ""
    return f"{g('dataset')} mlp {hidden} {g('optimizer')} lr={g('lr')} bs={g('batch_size')} ep={g('epochs')}{limit}"


def chart(fig: Any, key: str) -> None:
    """A plotly chart with a stable key, so a refresh updates it in place."""
    st.plotly_chart(fig, key=key, config=PLOT_CONFIG, theme=None)


def last_value(records: MetricTable, tag: str) -> float | None:
    """Latest finite value of `tag`, or None."""
    return records.last(tag)


def fmt(v: float | None, spec: str = ".4g") -> str:
    """A number for st.metric, or an em dash."""
    return "—" if v is None else format(v, spec)


def problem_message(status: dict[str, Any]) -> None:
    """st.error with the run's own message for failed / diverged / crashed runs (never a traceback)."""
    if status.get("state") in PROBLEM_STATES:
        st.error(status.get("message") or f"The run {status['state']}.", icon=":material/error:")


def progress(status: dict[str, Any]) -> None:
    """Progress bar with epoch/step, steps/s, ETA and compile time in its caption."""
    step, total = status.get("step") or 0, status.get("total_steps") or 0
    frac = min(1.0, max(0.0, step / total)) if total else 0.0
    if status.get("state") == "finished":
        frac = 1.0
    st.progress(frac, text=figures.progress_text(status))


def regression_fit(run_dir: Path, records: MetricTable, key: str) -> tuple[float | None, float | None]:
    """Data scatter, true line and the latest fitted line; returns (w, b)."""
    sample = _data_sample(run_dir)
    w, b = last_value(records, "regression/weight"), last_value(records, "regression/bias")
    if w is None or b is None:
        fit = state.read_artifact(run_dir, "fit.json") or {}
        w, b = (_finite(fit.get(k)) for k in ("weight", "bias"))
    if sample is None:
        st.info("Waiting for the data sample…", icon=":material/hourglass_top:")
        return w, b
    fits = (w, b) if w is not None and b is not None else None
    chart(
        figures.regression_fit_figure(
            sample["x"], sample["y"], sample["true_weight"], sample["true_bias"], fits, uirevision=key
        ),
        key,
    )
    return w, b


def _data_sample(run_dir: Path) -> dict[str, Any] | None:
    """artifacts/data_sample.json, read once per session (it never changes during a run)."""
    cache = st.session_state.setdefault("_data_samples", {})
    if str(run_dir) not in cache:
        sample = state.read_artifact(run_dir, "data_sample.json")
        try:
            x, y = (np.asarray(sample[k], float).ravel() for k in ("x", "y"))  # type: ignore[index]
            true_w, true_b = float(sample["true_weight"]), float(sample["true_bias"])  # type: ignore[index]
        except (TypeError, KeyError, ValueError):  # missing, or not the sample's shape: nothing to draw
            return None
        if x.size != y.size:
            return None
        cache[str(run_dir)] = {"x": x, "y": y, "true_weight": true_w, "true_bias": true_b}
    return cache[str(run_dir)]


def _finite(v: Any) -> float | None:
    """v as a finite float, or None."""
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def regression_metrics(records: MetricTable, cfg: dict[str, Any], w: float | None, b: float | None) -> None:
    """Current w and b next to the true values, and the loss."""
    c = st.columns(3)
    tw, tb = cfg.get("true_weight"), cfg.get("true_bias")
    c[0].metric(
        "weight w", fmt(w), None if w is None or tw is None else f"{w - tw:+.3g} vs true {tw:g}", delta_color="off"
    )
    c[1].metric(
        "bias b", fmt(b), None if b is None or tb is None else f"{b - tb:+.3g} vs true {tb:g}", delta_color="off"
    )
    c[2].metric("train loss", fmt(last_value(records, "train/loss")))


def loss_chart(records: MetricTable, key: str, x: str = "step", smoothing: float = 0.0) -> None:
    """Train (and test) loss."""
    curves = {t.split("/")[0]: records.series(t, x) for t in ("train/loss", "test/loss")}
    curves = {k: v for k, v in curves.items() if v[0].size}
    chart(figures.curves_figure(curves, "Loss", "loss", x_title=x, smoothing=smoothing, uirevision=key), key)


def accuracy_chart(records: MetricTable, key: str, x: str = "step", smoothing: float = 0.0) -> None:
    """Train and test accuracy."""
    curves = {t.split("/")[0]: records.series(t, x) for t in ("train/acc", "test/acc")}
    curves = {k: v for k, v in curves.items() if v[0].size}
    chart(figures.accuracy_figure(curves, smoothing=smoothing, x_title=x, uirevision=key), key)


def mnist_metrics(records: MetricTable, status: dict[str, Any]) -> None:
    """Accuracy, throughput and compile time (shown apart from the steady-state rate)."""
    c = st.columns(4)
    acc = last_value(records, "test/acc")
    c[0].metric("test accuracy", "—" if acc is None else f"{acc:.2%}")
    c[1].metric("train loss", fmt(last_value(records, "train/loss")))
    sps = status.get("steps_per_sec")
    c[2].metric("steps/s", "—" if not sps else f"{sps:,.0f}")
    comp = status.get("compile_seconds")
    c[3].metric(
        "compile time", "—" if comp is None else f"{comp:.1f} s", help="First (compiling) chunk beyond a steady one."
    )


def resume_control(run_dir: Path, status: dict[str, Any], key: str, label: str = "Resume") -> None:
    """A Resume button for a stopped or crashed run with a checkpoint; says why when a resume failed."""
    if status.get("resume_error"):
        st.warning(f"Resume failed: {status['resume_error']}", icon=":material/warning:")
    if status.get("state") not in state.RESUMABLE_STATES or not launcher.has_checkpoint(run_dir):
        return
    if st.button(
        label, icon=":material/replay:", key=key, help="Continue from its latest checkpoint in a new process."
    ):
        launcher.resume(run_dir)
        st.rerun()  # the whole page: it refreshes while the run is active again


def _side_legend(fig: Any) -> Any:
    """Legend at the right, one entry per line: K members on top would wrap into rows over the title."""
    fig.update_layout(
        legend=dict(orientation="v", yanchor="top", y=1, xanchor="left", x=1.02, font=dict(size=11)),
        margin=dict(t=50, r=10),
    )
    return fig


def member_colors(names: list[str]) -> dict[str, str]:
    """One color per population member, the same in every chart (the fit lines use this order too)."""
    return {n: figures.COLORS[i % len(figures.COLORS)] for i, n in enumerate(names)}


def group_fit(run_dirs: list[Path], records: list[MetricTable], names: list[str], key: str, seeds_vary: bool) -> None:
    """Member 0's data, the true line and every member's latest fitted line."""
    sample = _data_sample(run_dirs[0])
    if sample is None:
        st.info("Waiting for the data sample…", icon=":material/hourglass_top:")
        return
    latest = [(last_value(r, "regression/weight"), last_value(r, "regression/bias")) for r in records]
    if all(w is not None and b is not None for w, b in latest):
        fits, shown = latest, names  # all members log together, so this is the usual case
    else:
        pairs = [(f, n) for f, n in zip(latest, names, strict=True) if None not in f]
        fits, shown = [f for f, _ in pairs], [n for _, n in pairs]
    title = f"Fits of {len(names)} members" + (" (data of the first seed)" if seeds_vary else "")
    fig = figures.regression_fit_figure(
        sample["x"],
        sample["y"],
        sample["true_weight"],
        sample["true_bias"],
        fits or None,
        shown or None,
        title=title,
        uirevision=key,
    )
    for trace, name in zip(fig.data[2:], shown, strict=False):
        trace.name = (
            name  # the member alone (its w and b are in the table and on hover), short enough for a side legend
        )
    chart(_side_legend(fig), key)


def group_curves(
    records: list[MetricTable], names: list[str], tag: str, key: str, *, title: str, accuracy: bool = False
) -> None:
    """`tag` of every member overlaid, colored as in `member_colors`."""
    curves = {n: r.series(tag) for n, r in zip(names, records, strict=True)}
    colors = member_colors(names)
    if accuracy:
        # Auto range: K members close together would be flat lines on a fixed 0-100% axis.
        fig = figures.accuracy_figure(curves, title=title, uirevision=key, colors=colors, y_range=None)
    else:
        fig = figures.curves_figure(curves, title, tag.split("/")[-1], uirevision=key, colors=colors)
    chart(_side_legend(fig), key)


def members_table(
    members: list[run_store.RunInfo],
    statuses: list[dict[str, Any]],
    records: list[MetricTable],
    names: list[str],
) -> None:
    """One row per member: its varied values, state, step and latest metrics."""
    rows = []
    for m, s, r, n in zip(members, statuses, records, names, strict=True):
        row = {
            "member": n,
            "state": s.get("state", "?"),
            "step": s.get("step"),
            "train loss": last_value(r, "train/loss"),
        }
        if m.task == "regression":
            row |= {"w": last_value(r, "regression/weight"), "b": last_value(r, "regression/bias")}
        else:
            row |= {"train acc": last_value(r, "train/acc"), "test acc": last_value(r, "test/acc")}
        rows.append(row)
    st.dataframe(
        rows,
        hide_index=True,
        column_config={
            "train loss": st.column_config.NumberColumn(format="%.4g"),
            "w": st.column_config.NumberColumn(format="%.4g"),
            "b": st.column_config.NumberColumn(format="%.4g"),
            "train acc": st.column_config.NumberColumn(format="percent"),
            "test acc": st.column_config.NumberColumn(format="percent"),
        },
    )
