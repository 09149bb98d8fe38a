"""The Runs page's grouping by a config field, as W&B's "Group by": the picker, and the table's row per group
(its value, how many runs, the mean of each final metric), whose rows narrow the runs table to their runs.

The groups are `components.run_groups`'s; the comparison below draws each group as one line with its band
(`dashboard.panels.compare`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import pandas as pd
import streamlit as st

from components import run_groups
from dashboard.panels import runs_index
from dashboard.reading import provider
from dashboard.reading.provider import IndexedRun

PICKER_KEY = "runs_group_by"
PREFIX = runs_index.HPARAM_PREFIX  # the picker names a field as the table's column does: "config.lr"


def picker(options: Sequence[str], where: object | None = None) -> str | None:
    """A "Group by" select box of config fields (flattened keys: `runstore.provider.keys`); the chosen key, or None."""
    options = list(options)
    if st.session_state.get(PICKER_KEY) not in (None, *options):
        st.session_state[PICKER_KEY] = None  # a field the runs shown no longer have: grouping ends
    return (where or st).selectbox(  # type: ignore[attr-defined]
        "Group by",
        options,
        index=None,
        format_func=lambda k: PREFIX + k,
        key=PICKER_KEY,
        placeholder="no grouping",
        help="Runs with the same value of a config field become one group: a row here with the mean of each final "
        "metric, and one line (the mean, with a band) in the comparison below.",
    )


def groups_table(
    shown: pd.DataFrame, runs: Sequence[provider.RunInfo | IndexedRun], key: str
) -> tuple[pd.DataFrame, list[str]]:
    """The groups of the runs `shown`, a row each. Returns the rows of the runs table to show under it (every run,
    a group's runs together; or only those of the groups picked in this table) and the ids of the picked groups' runs."""
    by_id = {r.run_id: r for r in runs}
    values = {rid: by_id[rid].flat_config[key] for rid in shown["run_id"] if key in by_id[rid].flat_config}
    configs = {rid: ({key: values[rid]} if rid in values else {}) for rid in shown["run_id"]}
    found = run_groups.groups(configs, key)
    metrics = runs_index.metric_columns(shown)
    table = run_groups.table(shown, key, values, metrics)
    table = table.rename(columns={key: PREFIX + key} | {m: f"mean {m}" for m in metrics})
    digest = hashlib.sha1("|".join(f"{g.text}:{','.join(g.run_ids)}" for g in found).encode()).hexdigest()[:10]
    event = st.dataframe(
        table,
        key=f"runs_groups_{digest}",
        hide_index=True,
        on_select="rerun",
        selection_mode="multi-row",
        column_config={f"mean {m}": st.column_config.NumberColumn(f"mean {m}", format="%.4g") for m in metrics},
    )
    picked = [found[i] for i in (event.selection.rows if event is not None else []) if i < len(found)]
    order = {rid: i for i, g in enumerate(found) for rid in g.run_ids}
    rows = shown.iloc[sorted(range(len(shown)), key=lambda i: order[shown["run_id"].iloc[i]])]  # a group together
    if not picked:
        st.caption(
            f"{len(found)} group{'' if len(found) == 1 else 's'} of {PREFIX}{key}: pick groups to see their runs."
        )
        return rows, []
    ids = [rid for g in picked for rid in g.run_ids]
    return rows[rows["run_id"].isin(ids)], ids
