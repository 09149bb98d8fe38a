"""Sweeps: the run queue, and one study's trials, parallel coordinates, best so far and param importances.

Redrawn every 2 s by a fragment, so queued, running and finished trials show without a reload.
"""

from __future__ import annotations

import time
import urllib.parse

import pandas as pd
import streamlit as st

from components.sweep_figures import best_so_far, parallel_coordinates
from dashboard import refresh_timings
from dashboard.panels import safe_text
from dashboard.panels.panels import chart
from dashboard.reading import provider
from settings.fields import ConfigError

REFRESH_S = refresh_timings.seconds("sweep_rerun")
REFUSED_SHOWN_S = 3600.0  # a refused job is named on this page for an hour
# Words, not emoji: headless browsers and some desktops have no emoji font (they drew empty boxes).
STATE_MARKS = {"COMPLETE": "finished", "RUNNING": "running", "PRUNED": "pruned", "FAIL": "failed"}
STATE_MARKS["WAITING"] = "queued"  # a grid point not yet claimed, or a dead worker's trial re-queued


def queue_panel() -> None:
    """The run queue, or one line saying why it cannot be read (a damaged, read-only, locked or linked queue.db)."""
    try:
        _queue_panel()
    except OSError as exc:  # QueueError, KeyRefused, UnsafePath: one line naming the file and the fix
        st.error(safe_text.md(f"Run queue: {exc}"), icon=":material/error:")


def _queue_panel() -> None:
    """Running and queued jobs with their position; queued ones can be cancelled."""
    from dashboard.processes import launcher, page_queue
    from settings.queue.store import Queue

    queue = Queue(provider.runs_root(), wait_s=page_queue.PAGE_WAIT_S)  # a damaged queue.db raises here
    problem = queue.write_problem()
    if problem:  # still listed below (it can be read), but nothing can be queued, started or cancelled
        st.error(safe_text.md(f"Run queue: {problem}"), icon=":material/error:")
    page_queue.dispatch(provider.runs_root(), launcher.start_now)  # a slot that freed up starts the next job
    jobs = [j for j in queue.jobs() if j["state"] in ("queued", "running")]
    limit = queue.limit()  # read after the field's callback: a new value shows at once
    st.number_input(
        "Training processes at once",
        min_value=1,
        max_value=256,
        value=limit,
        key="queue_limit",
        on_change=lambda: _set_limit(queue, int(st.session_state["queue_limit"])),
        help="The run queue starts queued runs and sweep trials while fewer than this many train "
        "(the default follows the cores and free memory; `--queue-limit N` sets it from the CLI).",
    )
    st.caption(f"Run queue: {len(jobs)} job(s); at most {limit} training processes at once.")
    for j in queue.jobs():
        if j["state"] == "refused" and time.time() - (j["ended"] or 0) < REFUSED_SHOWN_S:
            st.warning(safe_text.md(f"The run queue refused {j['reason']}."))
    for j in jobs:
        c = st.columns([1, 5, 1])
        where = f"#{j['position']} in line" if j["state"] == "queued" else "running"
        c[0].write(where)
        c[1].markdown(safe_text.code(j["label"]))
        if j["state"] == "queued" and c[2].button("Cancel", key=f"cancel_{j['id']}"):
            queue.cancel(j["id"])  # an error here is one line too (queue_panel)
            st.rerun(scope="fragment")


def _set_limit(queue: object, n: int) -> None:
    try:
        queue.set_limit(n)
    except OSError as exc:  # e.g. read-only or locked since the page drew it
        st.toast(safe_text.md(f"Run queue: {exc}"), icon=":material/error:")


def _mark(row: dict) -> str:
    """The trial's state in words; a FAIL trial says what its run did (failed, diverged, stopped)."""
    if row["state"] == "FAIL" and row.get("run_state"):
        return str(row["run_state"])
    return STATE_MARKS.get(row["state"], row["state"])


def trials_table(rows: list[dict], objective: dict[str, str]) -> None:
    """One row per trial: state mark, value (the objective's, named with its direction; a pruned trial's
    last reported one), the step it reached, settings, shared program, a link to its run page."""
    programs: dict[str, int] = {}
    for r in rows:
        if r["program"]:
            programs[r["program"]] = programs.get(r["program"], 0) + 1
    table = pd.DataFrame(
        [
            {
                "trial": r["trial"],
                "state": _mark(r),
                value_title(objective): r["value"],
                "step": r["last_step"],
                **{f"{k}": v for k, v in r["params"].items()},
                "program": (f"shared by {programs[r['program']]}" if programs.get(r["program"], 0) > 1 else "own")
                if r["program"]
                else "",
                "retry of": r["retry_of"],
                "run": "/detail?" + urllib.parse.urlencode({"run": r["run_id"]}) if r["run_id"] else None,
            }
            for r in rows
        ]
    )
    st.dataframe(
        table,
        hide_index=True,
        column_config={"run": st.column_config.LinkColumn("run page", display_text="open")},
        key="sweep_trials",
    )


def value_title(objective: dict[str, str]) -> str:
    """The value column's title: the objective metric and its direction, e.g. "train/loss (minimize)"."""
    return f"{objective['metric']} ({objective['direction']})"


def study_view(name: str, url: str) -> None:
    """The chosen study: counts, table, figures and importances."""
    from settings.sweep import report
    from settings.sweep import study as studies

    study = studies.load(name, url)
    rows = report.trial_rows(study)
    objective = report.objective_of(study)
    budget = study.user_attrs.get("trials")
    counts = pd.Series([_mark(r) for r in rows]).value_counts().to_dict() if rows else {}
    st.caption(
        safe_text.md(
            f"{study.user_attrs.get('method')} sweep of {study.user_attrs.get('task')}: "
            + ", ".join(f"{k} {v}" for k, v in counts.items())
            + f" of {budget} trials"
        )
    )
    st.caption(
        safe_text.md(
            f"Objective: {objective['metric']}, {objective['direction']}d; pruner: {objective['pruner']} "
            "(a pruned trial's value is the last it reported, at its step)."
        )
    )
    trials_table(rows, objective)
    metric, direction = value_title(objective), objective["direction"]
    c = st.columns(2)
    with c[0]:  # in-place charts, as every page's: their colours follow the page's theme
        chart(parallel_coordinates(rows, metric, direction), "sweep_parcoords")
    with c[1]:
        chart(best_so_far(rows, metric, direction), "sweep_best")
    imp = report.importances(study)
    st.caption(
        "Param importances (optuna.importance, fANOVA): how much of the objective's spread each setting explains."
    )
    if isinstance(imp, str):
        st.caption(safe_text.md(imp))
    else:
        st.bar_chart(pd.Series(imp, name="importance"), horizontal=True)


def live() -> None:
    """Everything that changes: the queue and the chosen study."""
    queue_panel()
    from settings.sweep import report

    url = report.default_storage(provider.runs_root())
    if url is None:
        st.info("No sweeps yet: start one from New run (Sweep) or `python -m training TASK --sweep FIELD=...`.")
        return
    try:
        names = [s["name"] for s in report.list_studies(url)]
    except ConfigError as exc:  # e.g. sweeps.db is a link: refused, never opened
        st.error(safe_text.md("; ".join(exc.errors.values())), icon=":material/error:")
        return
    except Exception as exc:  # noqa: BLE001 - a damaged sweeps.db: say so in one line, keep the page
        from settings.sweep.server import is_server, shown

        fix = "check the server and the URL" if is_server(url) else "move the file away to start over"
        reason = (
            type(exc).__name__ if is_server(url) else f"{type(exc).__name__}: {exc}"
        )  # a server's error may echo the URL
        st.error(safe_text.md(f"{shown(url)}: cannot read the sweeps ({reason}); {fix}."))
        return
    if not names:
        st.info("No sweeps yet.")
        return
    wanted = st.query_params.get("study")
    name = st.selectbox("Study", names, index=names.index(wanted) if wanted in names else 0, key="sweep_study")
    try:
        study_view(name, url)
    except ConfigError as exc:
        st.error(safe_text.md("; ".join(exc.errors.values())))


def page() -> None:
    """Title, then the live part."""
    st.title("Sweeps")
    st.fragment(live, run_every=REFRESH_S)()


page()
