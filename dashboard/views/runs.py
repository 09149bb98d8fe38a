"""Runs & compare: the runs table (filters, search, tags and notes), compare the selection, CSV, delete."""

from __future__ import annotations

import hashlib
import time
from pathlib import Path

import pandas as pd
import streamlit as st

from dashboard import refresh_timings, state
from dashboard.panels import (
    compare,
    data_panels,
    inplace_chart,
    panels,
    refresh_trigger,
    run_grouping,
    runs_index,
    runs_pager,
    safe_text,
)
from dashboard.processes import launch_status, launcher, notes_sinks
from dashboard.reading import groups, provider, run_list, runs_page
from runstore import run_store

COLUMN_CONFIG = {
    "tags": st.column_config.ListColumn("tags"),
    "group": st.column_config.TextColumn("population", help="Runs trained together (one process, vmapped)."),
    "wandb group": st.column_config.TextColumn(
        "W&B group", help="A W&B script's group=: runs shown together, each with its own state and config."
    ),
    "alerts": st.column_config.NumberColumn("alerts", format="%d ⚠", help="Alerts the run raised (wandb.alert)."),
    "started": st.column_config.DatetimeColumn("started", format="YYYY-MM-DD HH:mm:ss"),
    "duration": st.column_config.NumberColumn("duration (s)", format="%.1f"),
}


def runs_frame(runs: list[provider.RunInfo]) -> pd.DataFrame:
    """One row per run (computing only; drawing is `table`)."""
    return runs_index.frame(runs, panels.key_config, groups.short_id)


FILTERS = {"states": "Status", "tasks": "Task", "groups": "Population", "tags": "Tag"}
WANDB_FILTERS = {"wandb_groups": "W&B group", "job_types": "Job type"}  # offered when a run has one


def filter_choices(root: Path, now: float) -> dict[str, list[str]]:
    """The values each filter can take (`provider.choices`, read once a page run: each is a scan of the index);
    none while the index cannot be read."""
    try:
        return provider.choices(root, now)
    except provider.IndexUnavailable:
        return {name: [] for name in ("states", "tasks", "populations", "tags", *WANDB_FILTERS)}


def filters(choices: dict[str, list[str]], now: float) -> provider.Narrow:
    """Search box and one multi-select per filter (status, task, population, tag; W&B group and job type), their
    values `filter_choices`'; states as the table shows them at `now` ("stalled")."""
    options = {("groups" if name == "populations" else name): values for name, values in choices.items()}
    shown = FILTERS | {name: label for name, label in WANDB_FILTERS.items() if options[name]}
    c = st.columns([3] + [2] * len(shown))
    text = c[0].text_input(
        "Search", key="runs_search", placeholder="name, settings, notes…", help="Every word must occur."
    )
    picked = {
        name: col.multiselect(
            label,
            options[name],
            key=f"runs_filter_{name}",
            placeholder="all",
            format_func=groups.short_id if name == "groups" else str,
        )
        for col, (name, label) in zip(c[1:], shown.items(), strict=True)
    }
    return provider.Narrow(text=text, populations=picked.pop("groups", []), now=now, **picked)


QUERY_HELP = (
    "Comparisons on config.<key>, summary.<key> (.min, .max), tags, state, name, id, joined by and, or, not: "
    "see the docs' Queries page."
)


def query_box(where: object | None = None) -> str:
    """The query box over the run index; its text."""
    return (where or st).text_input(  # type: ignore[attr-defined]
        "Query",
        key="runs_query",
        placeholder='config.lr < 0.01 and summary.test/acc.max > 0.9 and tags contains "baseline"',
        help=QUERY_HELP,
    )


def table(df: pd.DataFrame, key: str, default: list[int]) -> list[int]:
    """The runs table with multi-row selection (click a header to sort); returns the selected positions."""
    metric_config = {
        c: st.column_config.NumberColumn(c, format="percent" if c.endswith("acc") else "%.4g")
        for c in runs_index.metric_columns(df)
    }
    hidden = ["run_id", "search", "_group"]  # dropped, not just hidden: 1,000 runs' search text is ~200 KB a page
    event = st.dataframe(
        df.drop(columns=hidden),
        key=key,
        hide_index=True,
        on_select="rerun",
        selection_mode="multi-row",
        selection_default={"selection": {"rows": default}},
        placeholder="—",
        column_config=COLUMN_CONFIG | metric_config,
    )
    return list(event.selection.rows) if event is not None else []


def compare_ids(values: list[str], known: set[str]) -> list[str]:
    """The run ids a compare link names: `?compare=a,b` or `?compare=a&compare=b`; a value that is a run's
    whole id is that run (an id is data: it may hold a comma)."""
    return [i for v in values for i in ([v] if v in known else v.split(","))]


REFRESH_S = refresh_timings.seconds("runs_rerun")
# Records alone (the table's step, progress and steps/s) rerun it at most this often: each rerun redraws
# the whole table canvas (every 2 s: ~640 messages and 2.0 s of Chromium CPU a minute here; every 5 s,
# 209 messages and 1.8 s; every 15 s, 76 and 1.2 s, a page with nothing to follow ~0.95: page_probe runs).
RECORDS_REFRESH_S = refresh_timings.seconds("runs_records_rerun")
COMPARE_MAX = 100  # runs the query's button compares at once (each a line in every panel)
FILTER_KEYS = ("runs_search", "runs_query", *(f"runs_filter_{name}" for name in (*FILTERS, *WANDB_FILTERS)))
PAGE_SIZE = runs_page.PAGE_SIZE
CHANGED = "_runs_changed"  # this session changed runs (notes, a delete): the next page run waits for the index


def _select(ids: list[str], table_key: str, shown: list[str], clear: bool = True) -> None:
    """Callback: select `ids`; filters are cleared (unless `clear` is False: `ids` are all in the table already),
    so every one of them is in the table drawn next.

    With no filter on, the table keeps its key: its selection state is set directly.
    """
    for k in FILTER_KEYS if clear else ():
        st.session_state[k] = "" if k in ("runs_search", "runs_query") else []
    if clear:
        st.session_state[runs_pager.PAGE_KEY] = 1
    st.session_state["selected_ids"] = list(ids)
    rows = [i for i, rid in enumerate(shown) if rid in ids]
    st.session_state[table_key] = {"selection": {"rows": rows, "columns": [], "cells": []}}


def select_groups(
    runs: list[provider.RunInfo], selected: list[provider.RunInfo], row: object, table_key: str, shown: list[str]
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
                help=f"Select every member of {safe_text.md(group)} to compare them.",
                on_click=_select,
                args=([r.run_id for r in runs if r.run_id in chosen | set(ids)], table_key, shown),
            )


def select_wandb_groups(
    df: pd.DataFrame, selected: list[provider.RunInfo], row: object, table_key: str, shown: list[str]
) -> None:
    """A button per W&B group the selection touches but does not hold whole: select all its runs."""
    chosen = {r.run_id for r in selected}
    by_id = dict(zip(df["run_id"], df["wandb group"], strict=True))
    for group in dict.fromkeys(g for g in (by_id.get(r.run_id) for r in selected) if isinstance(g, str)):
        ids = runs_index.wandb_group_ids(df, group)
        if not set(ids) <= chosen:
            row.button(  # type: ignore[attr-defined]
                f"Select whole W&B group ({len(ids)})",
                icon=":material/select_all:",
                key=f"select_wandb_group_{hashlib.sha1(group.encode()).hexdigest()[:10]}",
                help="Select every run of this W&B group to compare them.",
                on_click=_select,
                args=([rid for rid in df["run_id"] if rid in chosen | set(ids)], table_key, shown),
            )


def notes_editor(run: provider.RunInfo, known: list[str]) -> None:
    """Display name, tags and notes of one run: saved to its folder, TensorBoard and (online) W&B."""
    current = provider.notes(run.path)
    with st.expander("Name, tags and notes", icon=":material/edit_note:", expanded=False):
        with st.form(data_panels.widget_key("notes", run.run_id), border=False):
            name = st.text_input("Display name", value=current.display_name, placeholder=run.name, key="notes_name")
            tags = st.multiselect(
                "Tags",
                sorted(set(known) | set(current.tags), key=str.lower),
                default=current.tags,
                accept_new_options=True,
                key="notes_tags",
                placeholder="add a tag",
            )
            notes = st.text_area("Notes", value=current.notes, key="notes_text", height=100)
            saved = st.form_submit_button("Save", icon=":material/save:")
        if saved:
            current = notes_sinks.save(run.path, name, tags, notes, launch_status.run_status(run.path))
            st.toast("Saved with the run.", icon=":material/check:")
        for sink, outcome in current.sent.items():
            st.caption(safe_text.md(f"{'TensorBoard' if sink == 'tensorboard' else 'W&B'}: {outcome}"))
    if saved:
        st.session_state[CHANGED] = True  # the next page run waits for the index to hold the new notes
        st.rerun()


def actions(
    selected: list[provider.RunInfo],
    runs: list[provider.RunInfo],
    table_key: str,
    shown: list[str],
    df: pd.DataFrame | None = None,
) -> None:
    """Open, select population or W&B group, stop, download and delete (with a confirmation) for the selected runs."""
    row = st.container(horizontal=True)
    select_groups(runs, selected, row, table_key, shown)
    if df is not None:
        select_wandb_groups(df, selected, row, table_key, shown)
    if len(selected) == 1:
        run = selected[0]
        if row.button("Open detail", icon=":material/insights:"):
            state.remember_run(run.run_id)
            st.switch_page("views/detail.py", query_params={"run": run.run_id})
        if row.button("Open live", icon=":material/monitoring:"):
            state.remember_run(run.run_id)
            st.switch_page("views/live.py", query_params={"run": run.run_id})
        panels.csv_download(run, row)
    active = [
        r for r in selected if run_list.is_active(r.status) and provider.abilities(r.path).stoppable
    ]  # not ours to stop
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


def delete(runs: list[provider.RunInfo]) -> None:
    """Delete runs; a running one is refused with its message."""
    st.session_state.pop("confirm_delete", None)
    for r in runs:
        try:
            run_store.delete_run(r.path, provider.runs_root())
        except (RuntimeError, ValueError, OSError) as exc:
            st.error(safe_text.md(f"{r.name}: {exc}"))
            return
    st.session_state[CHANGED] = True
    st.rerun()


def _matching(root: Path, query: str, narrow: provider.Narrow, where: object) -> tuple[str, provider.Narrow]:
    """The query as the index reads it ("" when it cannot be read: its error is one line under the box)."""
    try:
        provider.matching_ids(root, query, provider.Narrow(ids=[]))  # parses it; reads no run
    except (provider.QueryError, provider.IndexUnavailable) as exc:
        where.error(safe_text.md(exc), icon=":material/error:")  # type: ignore[attr-defined]
        return "", narrow
    return query, narrow


def _grouped(root: Path, query: str, narrow: provider.Narrow, key: str, metrics: list[str]) -> list[str]:
    """The groups table of every run matching (a row per value of config `key`); the ids of the groups picked."""
    matching = provider.matching(root, query, narrow)
    frame = pd.DataFrame(
        [
            {"run_id": r.run_id, **{m: (r.summary.get(m[len("final ") :]) or [None])[0] for m in metrics}}
            for r in matching
        ],
        columns=["run_id", *metrics],
    )
    return run_grouping.groups_table(frame, matching, key)[1]  # type: ignore[arg-type]


def body(active_ids: list[str] | None = None) -> None:
    """Filters, sort and one page of the runs table, then actions, notes and the comparison of the selection.

    active_ids: the active runs whose changes rerun this (refresh_trigger): a new state at most every
    REFRESH_S, records alone every RECORDS_REFRESH_S.
    """
    if active_ids:
        refresh_trigger.rerun_on_change(
            active_ids, key="runs_trigger", gap_ms=int(REFRESH_S * 1000), stream_gap_ms=int(RECORDS_REFRESH_S * 1000)
        )
    root = provider.runs_root()
    index = st.session_state.pop("_runs_index", None) or runs_page.open_index(root)  # asked once per page run
    everything = provider.indexed_count(root)
    if not everything and not index.building:
        st.info(f"No runs under {safe_text.code(root)} yet.")
        return
    if st.query_params.get("compare"):  # a shared link: ?compare=<id>,<id>,... selects those runs once
        values = st.query_params.get_all("compare")
        known = set(provider.matching_ids(root, narrow=provider.Narrow(ids=values)))  # values that are an id
        st.session_state["selected_ids"] = compare_ids(values, known)
        del st.query_params["compare"]
    now = time.time()  # one time for the filter's choices, its selection and the query's states
    choices = filter_choices(root, now)
    narrow = filters(choices, now)
    query_col, group_col, sort_col, desc_col = st.columns([4, 1.2, 1.2, 0.8], vertical_alignment="bottom")
    query, narrow = _matching(root, query_box(query_col), narrow, query_col)
    group_by = run_grouping.picker(runs_pager.group_options(root, query, narrow), group_col)
    order = runs_pager.sort_picker(root, sort_col, desc_col)
    first = ""
    if st.toggle("Group by W&B group", key="runs_by_wandb_group") if choices["wandb_groups"] else False:
        first = provider.BY_WANDB_GROUP  # each run keeps its row: its own state and config
    picked: list[str] = []
    if group_by is not None:
        metrics = [f"final {k}" for k in runs_pager.final_keys(root)]
        picked = _grouped(root, query, narrow, group_by, metrics)
        order = f"+{runs_pager.field('config', group_by) or 'created'}"  # a group's runs together
        if picked:
            narrow.ids = picked
    first = first or provider.members_together(order)  # by created: a population's members as one block
    total = provider.count(root, query, narrow)
    offset = runs_pager.pager(total, PAGE_SIZE)
    page = provider.page(root, query, narrow, order=order, first=first, limit=PAGE_SIZE, offset=offset)
    captions = [f"{total} of {everything} runs match." if total < everything else f"{total} runs."]
    if total > PAGE_SIZE:
        captions.append(f"Rows {offset + 1}–{offset + len(page.runs)}.")
    if index.building:
        captions.append(f"Indexing {index.indexed} of {index.folders} runs: the list grows as it goes.")
    st.caption(" ".join(captions))
    shown_runs = runs_page.infos(page.runs)
    df = runs_frame(shown_runs)
    ids = list(df["run_id"])
    chosen = list(st.session_state.get("selected_ids", []))
    elsewhere = [i for i in chosen if i not in ids]  # selected on another page, still matching
    if elsewhere:
        elsewhere = provider.matching_ids(root, query, provider.Narrow(**{**vars(narrow), "ids": elsewhere}))
    kept = [ids.index(i) for i in chosen if i in ids]
    # The key follows the rows shown, so a new run or another filter redraws the table with the same runs selected.
    key = "runs_table_" + hashlib.sha1("|".join(ids).encode()).hexdigest()[:10]
    if picked:
        st.button(f"Select these {len(picked)} runs", icon=":material/select_all:", key="runs_group_select",
                  on_click=_select, args=(picked, key, ids, False))  # fmt: skip
    elif query.strip() and total:  # compare what the query selects, in one click
        matching = provider.matching_ids(root, query, narrow) if total <= COMPARE_MAX else []
        st.button(f"Compare the {total} runs matching", icon=":material/compare_arrows:", key="runs_select_matching",
                  on_click=_select, args=(matching, key, ids, False), disabled=total > COMPARE_MAX,
                  help=f"At most {COMPARE_MAX} runs at once: narrow the query." if total > COMPARE_MAX else None)  # fmt: skip
    on_page = [shown_runs[i] for i in table(df, key, kept) if i < len(shown_runs)]
    selected = runs_page.by_ids(root, elsewhere) + on_page if elsewhere else on_page
    st.session_state["selected_ids"] = [r.run_id for r in selected] + runs_page.not_indexed_yet(
        root, index, chosen, {r.run_id for r in selected}
    )
    if not selected:
        st.caption("Select runs in the table to compare them, tag them, download or delete them.")
        return
    selected_df = runs_frame(selected)
    wandb_groups = sorted({g for g in selected_df["wandb group"] if isinstance(g, str)})
    family = runs_page.related(root, selected, wandb_groups)
    actions(selected, family, key, ids, runs_frame(family) if wandb_groups else None)
    if len(selected) == 1:
        notes_editor(selected[0], choices["tags"])
    display = dict(zip(selected_df["run_id"], selected_df["name"], strict=True))
    st.subheader(f"Compare {len(selected)} run{'s' if len(selected) > 1 else ''}", divider="gray")
    compare.draw(selected, display, group_by)


if st.session_state.get("selected_ids") or st.query_params.get("compare"):
    inplace_chart.warm_up("grid")  # a comparison follows: its grids' uPlot loads while the server runs the page
st.title("Runs & compare")
st.caption(
    f"Runs under {safe_text.code(provider.runs_root())}, where scripts calling `jaxdash.init` write too "
    "(`$JAXDASH_RUNS` picks another folder)."
)
run_list.logdir_current(provider.runs_root())  # first: the index's update below then holds a logdir's new runs
st.session_state["_runs_index"] = runs_page.open_index(  # its keeper runs while it is open
    provider.runs_root(), changed=st.session_state.pop(CHANGED, False)
)
listed = runs_page.active(provider.runs_root())
refresh, polled_ids = refresh_trigger.follow(listed, REFRESH_S)
st.fragment(panels.guarded(body), run_every=refresh)(polled_ids)
