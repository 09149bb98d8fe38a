"""Runs & compare: the runs table, overlaid curves of the selected runs, CSV download, delete."""

from __future__ import annotations

import hashlib
import time
from datetime import datetime

import pandas as pd
import streamlit as st

from components import figures
from components.widgets import runs_table
from dashboard import groups, launcher, panels, state
from training import run_store

X_AXES = {"step": "step", "wall": "relative time (s)"}


def runs_frame(runs: list[run_store.RunInfo]) -> pd.DataFrame:
    """One row per run (computing only; drawing is `runs_table`)."""
    rows = []
    for r in runs:
        s, final = r.status, r.status.get("final") or {}
        started = s.get("started") or r.created
        end = s.get("ended") or (time.time() if state.is_active(s) else None)
        rows.append(
            {
                "name": r.name,
                "group": groups.short_id(groups.group_of(r)),
                "task": r.task,
                "status": s.get("state", "?"),
                "config": panels.key_config(r.task, r.config),
                "final loss": final.get("train/loss"),
                "test acc": final.get("test/acc"),
                "duration": s.get("wall_seconds")
                if s.get("ended") and s.get("wall_seconds")
                else (end - started if end and started else None),
                "started": datetime.fromtimestamp(started) if started else None,
                "message": s.get("message") if s.get("state") in panels.PROBLEM_STATES else None,
                "run_id": r.run_id,
            }
        )
    columns = ["name", "group", "task", "status", "config", "final loss", "test acc", "duration", "started"]
    columns += ["message", "run_id"]
    return pd.DataFrame(rows, columns=columns)


def compare(selected: list[run_store.RunInfo]) -> None:
    """Overlay one metric of the selected runs, with smoothing and a choice of x axis."""
    records = {r.run_id: state.all_metrics(r.path) for r in selected}
    tags = sorted(set().union(*(table.tags() for table in records.values())))
    if not tags:
        st.info("The selected runs have no metrics yet.")
        return
    c = st.columns([2, 2, 2, 1], vertical_alignment="bottom")
    tag = c[0].selectbox("Metric", tags, index=tags.index("train/loss") if "train/loss" in tags else 0, key="cmp_tag")
    smoothing = c[1].slider("Smoothing (EMA)", 0.0, 0.99, 0.0, 0.01, key="cmp_smooth")
    x = c[2].segmented_control(
        "x axis", list(X_AXES), format_func=X_AXES.get, default="step", required=True, key="cmp_x"
    )
    log_y = c[3].toggle("log y", value=False, key="cmp_log")
    names = {
        r.run_id: r.name if [s.name for s in selected].count(r.name) == 1 else f"{r.name} ({r.run_id[-4:]})"
        for r in selected
    }
    curves = {names[rid]: table.series(tag, x) for rid, table in records.items()}
    if "acc" in tag:  # auto range: runs a few points apart would be flat lines on a fixed 0-100% axis
        fig = figures.accuracy_figure(
            curves, title=tag, smoothing=smoothing, x_title=X_AXES[x], uirevision="compare", y_range=None
        )
    else:
        fig = figures.curves_figure(
            curves, tag, tag, x_title=X_AXES[x], smoothing=smoothing, log_y=log_y, uirevision="compare"
        )
    panels.chart(fig, "compare_chart")


def _select(table_key: str, runs: list[run_store.RunInfo], ids: list[str]) -> None:
    """Callback: make `ids` the table's selection (applied when the table is drawn next)."""
    rows = [i for i, r in enumerate(runs) if r.run_id in ids]
    st.session_state[table_key] = {"selection": {"rows": rows, "columns": [], "cells": []}}
    st.session_state["selected_ids"] = [runs[i].run_id for i in rows]


def select_groups(
    runs: list[run_store.RunInfo], selected: list[run_store.RunInfo], table_key: str, row: object
) -> None:
    """A button per population the selection touches but does not hold whole: select all its members."""
    chosen = {r.run_id for r in selected}
    for group in dict.fromkeys(g for g in map(groups.group_of, selected) if g):
        ids = [m.run_id for m in groups.members(runs, group)]
        if not set(ids) <= chosen:
            row.button(  # type: ignore[attr-defined]
                f"Select whole population ({len(ids)})",
                icon=":material/select_all:",
                key=f"select_group_{group}",
                help=f"Select every member of {group} to compare them.",
                on_click=_select,
                args=(table_key, runs, sorted(chosen | set(ids))),
            )


def actions(selected: list[run_store.RunInfo], runs: list[run_store.RunInfo], table_key: str) -> None:
    """Open, select population, stop, download and delete (with a confirmation) for the selected runs."""
    row = st.container(horizontal=True)
    select_groups(runs, selected, table_key, row)
    if len(selected) == 1:
        run = selected[0]
        if row.button("Open detail", icon=":material/insights:"):
            state.remember_run(run.run_id)
            st.switch_page("views/detail.py", query_params={"run": run.run_id})
        if row.button("Open live", icon=":material/monitoring:"):
            state.remember_run(run.run_id)
            st.switch_page("views/live.py", query_params={"run": run.run_id})
        row.download_button(
            "Metrics CSV",
            state.metrics_csv(run.path),
            file_name=f"{run.run_id}.csv",
            mime="text/csv",
            icon=":material/download:",
            on_click="ignore",
        )
    active = [r for r in selected if state.is_active(r.status)]
    if active and row.button(f"Stop ({len(active)})", icon=":material/stop:"):
        signalled = sum(launcher.stop(r.path) for r in active)
        st.toast(f"Asked {len(active)} run(s) to stop.")
        if signalled < len(active):
            st.info(launcher.STOP_FILE_ONLY, icon=":material/info:")
    if row.button(f"Delete ({len(selected)})", icon=":material/delete:"):
        st.session_state["confirm_delete"] = [r.run_id for r in selected]
    pending = st.session_state.get("confirm_delete")
    if pending:
        st.warning(f"Delete {len(pending)} run(s) and all their files? This cannot be undone.")
        yes, no = st.columns([1, 6])
        if yes.button("Yes, delete", type="primary", key="confirm_yes"):
            delete([r for r in selected if r.run_id in pending])
        if no.button("Cancel", key="confirm_no"):
            st.session_state.pop("confirm_delete")
            st.rerun()


def delete(runs: list[run_store.RunInfo]) -> None:
    """Delete runs; a running one is refused with its message."""
    st.session_state.pop("confirm_delete", None)
    for r in runs:
        try:
            run_store.delete_run(r.path, state.runs_root())
        except (RuntimeError, ValueError, OSError) as exc:
            st.error(f"{r.name}: {exc}")
            return
    st.rerun()


def body() -> None:
    """Table, then compare and actions for the selection."""
    runs = state.list_runs()
    if not runs:
        st.info(f"No runs under `{state.runs_root()}` yet.")
        return
    # The key follows the set of runs, so a new or deleted run redraws the table with the same runs selected.
    ids = [r.run_id for r in runs]
    kept = [ids.index(i) for i in st.session_state.get("selected_ids", []) if i in ids]
    key = "runs_table_" + hashlib.sha1("|".join(ids).encode()).hexdigest()[:10]
    rows = runs_table(runs_frame(runs), key=key, default=kept)
    selected = [runs[i] for i in rows if i < len(runs)]
    st.session_state["selected_ids"] = [r.run_id for r in selected]
    if not selected:
        st.caption("Select runs in the table to compare their curves, download or delete them.")
        return
    actions(selected, runs, key)
    compare(selected)


st.title("Runs & compare")
any_active = any(state.is_active(r.status) for r in state.list_runs())
st.fragment(panels.guarded(body), run_every=2.0 if any_active else None)()
