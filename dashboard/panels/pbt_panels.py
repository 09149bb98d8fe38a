"""Population-based training on the page: the form's PBT settings, and a PBT population's rates and copies.

Everything drawn comes from the members' run directories: `pbt/lr` in metrics.jsonl, the PBT
settings in status.json / config.json "pbt", and each member's copies in
artifacts/tables/pbt__lineage.json (training/engine/pbt.py). The charts' specs: member_lines.py (drawn by the
line chart engine, static/chart/).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import streamlit as st

from components import pbt_figures
from components.colors import run_color
from dashboard.forms import pbt_settings, population_form
from dashboard.forms.widgets import pbt_input
from dashboard.panels import line_spec, member_lines, safe_text
from dashboard.panels.panels import live_line
from dashboard.reading import groups, provider, run_list
from dashboard.reading.provider import MetricTable

LINEAGE_TAG = "pbt/lineage"


def population_pbt(
    task: str, prefix: str, population: Mapping[str, str] | None, errors: dict[str, str]
) -> dict[str, Any] | None:
    """The PBT toggle and settings under the population lists, offered once they list two learning rates.

    Pops the "pbt_*" messages from `errors` (drawn under their settings). Returns the form's raw
    settings (checked by `pbt_settings.check` on Start), or None without PBT.
    """
    lrs = population_form.split_list((population or {}).get("lr", ""))
    if population is None or len(lrs) < 2:
        for name in pbt_settings.LABELS:
            errors.pop(name, None)
        if population is not None:
            st.caption("List at least two learning rates to use population-based training.")
        return None
    metrics = pbt_settings.metric_choices(task)
    pbt = pbt_input(prefix, pbt_settings.LABELS, metrics, errors)
    if pbt is not None:
        k = population_form.population_size(population)
        label = metrics.get(pbt["metric"], str(pbt["metric"]))
        try:
            text = pbt_settings.summary(k, float(pbt["fraction"]), int(pbt["interval"]), label)
        except (TypeError, ValueError):
            text = ""
        if text:
            st.caption(safe_text.md(text))
    return pbt


def uses_pbt(members: Sequence[provider.RunInfo]) -> bool:
    """Whether this population trains with PBT (status.json "pbt" of any member)."""
    return any(isinstance(m.status.get("pbt"), dict) for m in members)


def copies_of(run_dir: Any) -> list[pbt_figures.CopyEvent]:
    """A member's copies so far (none while its lineage table is missing or being replaced)."""
    table = provider.read_table(run_dir, LINEAGE_TAG)
    return pbt_figures.copy_events(table.columns, table.rows) if table is not None else []


def source_names(members: Sequence[provider.RunInfo], names: Sequence[str]) -> dict[int, str]:
    """Member index -> its short name, to say whom a copy came from."""
    out = {}
    for m, n in zip(members, names, strict=True):
        index = m.status.get("member")
        if isinstance(index, int):
            out[index] = n
    return out


def copy_marks(members: Sequence[provider.RunInfo], names: Sequence[str]) -> member_lines.Copies | None:
    """Every member's copies, to mark on the charts of its curves; None for a population without PBT."""
    if not uses_pbt(members):
        return None
    copies = {n: copies_of(m.path) for m, n in zip(members, names, strict=True)}
    return member_lines.Copies(copies, source_names(members, names))


def settings_text(pbt: Mapping[str, Any], copies: int) -> str:
    """ "PBT: every 50 steps, ranked by train loss, the worst 25% copy the best · 9 copies so far"."""
    metric = (
        pbt_settings.METRIC_LABELS.get(pbt.get("metric") or "", pbt.get("metric"))
        or "test loss (train loss without a test set)"
    )
    metric = metric.lower()
    return (
        f"PBT: every {pbt.get('interval')} steps, ranked by {metric}, the worst {pbt.get('fraction', 0.25):.0%} "
        f"copy the best · {copies} cop{'y' if copies == 1 else 'ies'} so far (◆ on the curves)"
    )


def lr_chart(
    members: Sequence[provider.RunInfo], records: Sequence[MetricTable], names: Sequence[str], key: str
) -> None:
    """Every member's learning rate over steps (log axis), each in its member colour, its copies marked."""
    copies = copy_marks(members, names) or member_lines.Copies({}, {})
    version = (tuple(r.offset for r in records), tuple(names), _copies_version(copies))
    live_line(
        key, version, lambda: member_lines.lr_spec(key, member_lines.of_population(members, records, names), copies)
    )
    pbt = next((m.status["pbt"] for m in members if isinstance(m.status.get("pbt"), dict)), {})
    total = sum(len(c) for c in copies.events.values())
    st.caption(safe_text.md(settings_text(pbt, total)))  # status.json's words


def _copies_version(copies: member_lines.Copies) -> tuple[int, ...]:
    """What a chart's marks depend on: how many copies each member made."""
    return tuple(len(c) for c in copies.events.values())


def member_panel(run: provider.RunInfo, records: MetricTable, key: str) -> None:
    """A PBT member's own learning rate and copies (Run detail); nothing for other runs."""
    group = groups.group_of(run)
    if not isinstance(run.status.get("pbt"), dict) or not group:
        return
    members = groups.members(run_list.all_runs(), group)
    names = dict(zip([m.run_id for m in members], groups.labels(members), strict=True))
    name = names.get(run.run_id, run.name)
    sources = source_names(members, list(names.values()))
    st.subheader("Population-based training", divider="gray")
    copies = copies_of(run.path)
    style = line_spec.Style(run_color(run.run_id), label=run.name)
    own = member_lines.Member(name, records, style, run.run_id, provider.start_time(run.path))
    marks = member_lines.Copies({name: copies}, sources)
    live_line(key, (records.offset, len(copies)), lambda: member_lines.lr_spec(key, [own], marks))
    if not copies:
        st.caption("This member has not copied another one.")
        return
    rows = [
        {
            "step": e.step,
            "copied": sources.get(e.source, f"member {e.source}"),
            "why": e.reason,
            "lr before": e.old_lr,
            "lr after": e.new_lr,
        }
        for e in copies
    ]
    st.dataframe(
        rows,
        hide_index=True,
        column_config={
            "lr before": st.column_config.NumberColumn(format="%.3g"),
            "lr after": st.column_config.NumberColumn(format="%.3g"),
        },
    )
