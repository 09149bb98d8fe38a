"""Run detail: notes, final results, the task's panels, every metric (system too), its test report, its output,
W&B, TensorBoard."""

from __future__ import annotations

import dataclasses
import json
import re
import shlex
import urllib.parse
from pathlib import Path

import numpy as np
import pandas as pd
import streamlit as st

from components import figures
from dashboard import refresh_timings
from dashboard.forms.widgets import status_badge
from dashboard.panels import (
    alerts_panel,
    data_panels,
    defined_grids,
    hosts_panel,
    inplace_chart,
    key_panels,
    line_chart,
    live_numbers,
    media_panels,
    panel_kinds,
    panels,
    pbt_panels,
    refresh_trigger,
    run_files_panel,
    run_sections,
    safe_text,
    wandb_run_panel,
)
from dashboard.processes import launch_status, page_tensorboard
from dashboard.reading import groups, provider, run_list, run_metrics
from dashboard.reading.provider import MetricTable

DETAIL_REFRESH_S = refresh_timings.seconds("detail_rerun")
# While its run trains, the curves and the progress line follow the records in the browser (static/chart/feed.js,
# live_numbers); the summary reruns for a new state or phase after DETAIL_REFRESH_S, for records (every
# metric's chart, media) at most every DETAIL_FED_MS, as the Live panel, since each rerun sends the page
# ~28 messages (`benchmarks/page_probe.py detail`: Chromium 3.5-4.1 s of CPU a minute at 10 s, 2.3 at
# 20 s with the feed's 8 s gap). A run with process output (started from this dashboard: process.log)
# follows it only through these reruns: every DETAIL_OUTPUT_MS then, so a new line shows within ~10 s.
DETAIL_FED_MS = refresh_timings.ms("detail_fed_rerun")
DETAIL_OUTPUT_MS = refresh_timings.ms("detail_output_rerun")
DETAIL_PANEL_KEY = "detail_panel"


def _rk(run_id: str) -> str:
    """The part of a widget key that stands for a run: `_` and a digest of its id (an id is data: `__`, spaces,
    unicode, 200 characters), never the id itself."""
    return data_panels.widget_key("", run_id)


def final_label(status: dict, tag: str) -> str:
    """A final number's label: its tag, and what it is where it is not the tag's last logged value (status.json
    "final_basis": "train/loss · epoch mean"), so that it never reads as the tile of the same tag on Live."""
    basis = (status.get("final_basis") or {}).get(tag)
    return f"{tag} · {basis}" if isinstance(basis, str) and basis else tag


def results(run: provider.RunInfo, records: MetricTable, fed: bool = False, defs: dict | None = None) -> None:
    """Final metrics, the task's panels (config.json "panels"), then its test report when it wrote one.

    fed: the panels' curves append the run's new records in the browser (static/chart/feed.js).
    defs: the run's define_metric definitions (a metric defined hidden gets no tile, chart or histogram).
    """
    final = {k: v for k, v in (run.status.get("final") or {}).items() if not provider.hidden(defs or {}, k)}
    if final:
        cols = st.columns(min(4, len(final)))
        for i, (tag, v) in enumerate(final.items()):
            cols[i % len(cols)].metric(
                safe_text.md(final_label(run.status, tag)), f"{v:.2%}" if "acc" in tag else panels.fmt(v)
            )
    kinds = provider.run_panels(run.path, None, records.tags())
    chart = panel_kinds.ChartRun(records, run.path.name, fed=fed)
    panel_kinds.draw(run.path, kinds, chart, run.status, f"detail{_rk(run.run_id)}")
    pbt_panels.member_panel(run, records, f"detail_pbt{_rk(run.run_id)}")  # PBT: its lr and copies
    media_panels.media_section(run.path, records, f"detail_media{_rk(run.run_id)}", per_key=True)  # figures, tables
    # a panel per logged key of every kind (scalars, histograms, images, text), a section per prefix
    hidden = {k for k, d in (defs or {}).items() if d.get("hidden")}
    owned = {t for kind in kinds for t in key_panels.OWNED.get(kind, ())} | hidden
    data_panels.draw(run.path, records, "detail_keys", provider.runs_root(), data_panels.project_of(run.path), owned)
    report, problem = provider.classification(run.path)
    if problem:
        st.warning(safe_text.md(f"{provider.table_location(problem)}; not shown."))
    if report is None:
        if "accuracy" in kinds and provider.own_task(run.path):  # our tasks write one; a script may not
            st.caption("No confusion matrix yet (written at the end of the run).")
        return
    left, right = st.columns([2, 3])
    with left:
        panels.chart(
            figures.confusion_matrix_figure(report.confusion, report.class_names), f"detail_cm{_rk(run.run_id)}"
        )
    with right:
        mistakes(run.path, report)


def mistakes(run_dir: Path, report: provider.Classification, limit: int = 32) -> None:
    """Misclassified sample test images (artifacts/tables/test__predictions.json)."""
    if report.labels.size == 0:
        st.caption("No sample images.")
        return
    wrong = np.flatnonzero(report.labels != report.preds)[:limit]
    if wrong.size == 0:
        st.success("No mistakes among the sampled test images.")
        return
    fig = figures.image_grid_figure(
        report.images[wrong],
        report.labels[wrong],
        report.preds[wrong],
        report.class_names,
        title=f"Misclassified ({wrong.size} shown): pred (true)",
    )
    panels.chart(fig, f"detail_imgs{_rk(run_dir.name)}")


def tracking(run: provider.RunInfo) -> None:
    """W&B link or sync command, and the TensorBoard button."""
    wandb = run.status.get("wandb") or {}
    left, right = st.columns(2)
    with left:
        st.subheader("Weights & Biases", divider="gray")
        if wandb.get("url"):
            st.link_button("Open in W&B", wandb["url"], icon=":material/open_in_new:")
        elif wandb.get("sync_command"):
            # Inline code, not st.code: st.code makes a fresh tab load a 1.5 MB syntax highlighter.
            st.markdown(f"Logged offline. To upload it to W&B, run: {safe_text.code(wandb['sync_command'])}")
        elif wandb.get("mode"):  # a mirrored TensorBoard log has no W&B side to speak of
            st.caption(safe_text.md(f"W&B was not used for this run (mode: {wandb['mode']})."))
        else:
            st.caption("No W&B run was written for this run.")
        if wandb.get("error"):
            st.warning(safe_text.md(f"W&B: {wandb['error']}"))
    with right:
        st.subheader("TensorBoard", divider="gray")
        if st.button("Start TensorBoard", icon=":material/query_stats:", key="tb_start"):
            with st.spinner("Starting TensorBoard…"):
                try:
                    st.session_state["tb_url"] = page_tensorboard.tensorboard_url()
                except (RuntimeError, OSError) as exc:
                    st.error(safe_text.md(f"Could not start TensorBoard: {exc}"))
        if st.session_state.get("tb_url"):
            link = tensorboard_link(st.session_state["tb_url"], run.run_id)
            st.link_button("Open TensorBoard", link, icon=":material/open_in_new:")
            st.caption(
                f"Shows this run ({safe_text.code(run.run_id + '/tb/...')}); "
                "clear the run filter to compare with others."
            )


PINNED = ("train/loss", "test/loss", "train/acc", "test/acc")  # pinned on top of TensorBoard's Time Series


def tensorboard_link(base_url: str, run_id: str) -> str:
    """TensorBoard's Time Series filtered to one run, its train and test curves pinned on top.

    The run's TensorBoard runs are `<run id>/tb/<name>` under the runs root. `runFilter` and
    `pinnedCards` are query parameters TensorBoard's frontend reads into its run filter and pins;
    Time Series sorts the rest by tag (fit, params, perf, ... train), so the curves come first this way.
    """
    regex = "^" + re.sub(r"([.^$*+?()\[\]{}|\\])", r"\\\1", run_id) + "/"
    pinned = json.dumps([{"plugin": "scalars", "tag": tag} for tag in PINNED])
    query = urllib.parse.urlencode({"runFilter": regex, "pinnedCards": pinned})
    return f"{base_url.rstrip('/')}/?{query}#timeseries"


def summary(run: provider.RunInfo, was_active: bool, polled_ids: list[str] | None = None) -> None:
    """Badge, progress, CSV, Resume and results: re-read on every refresh while the run is active.

    polled_ids: rerun when the run wrote something (refresh_trigger), at most every DETAIL_REFRESH_S.
    """
    gap_ms = int(DETAIL_REFRESH_S * 1000)
    # Its curves and progress line follow the records between reruns: rerun for them less often. Placed
    # even with nothing to poll, so what is below keeps its place when the run ends.
    # followed only through the reruns: the launched process's output, a client script's console
    output = provider.has_process_output(run.path) or provider.has_console_output(run.path)
    stream_gap_ms = DETAIL_OUTPUT_MS if output else DETAIL_FED_MS
    refresh_trigger.rerun_on_change(
        polled_ids or [], key="detail_trigger", gap_ms=gap_ms, stream_gap_ms=stream_gap_ms, on=bool(polled_ids)
    )
    status = launch_status.run_status(run.path)
    run = dataclasses.replace(run, status=status)
    records = run_metrics.metrics(run.path)
    head = st.columns([1, 6, 2, 2], vertical_alignment="center")
    with head[0]:
        status_badge(status.get("state"))
    with head[1]:
        panels.progress(status)
    with head[2]:
        panels.csv_download(run)
    with head[3]:
        panels.resume_control(run.path, status, "detail_resume")
    panels.problem_message(status)
    alerts_panel.alerts_section(run.path)  # wandb.alert: above the charts, where it is seen
    alerts_panel.events_section(status)  # e.g. a write gap on a full disk
    hosts_panel.section(run.path)  # a jax.distributed job's processes: heartbeat, state
    fed = bool(polled_ids) and run_list.is_active(status)
    live_numbers.follow(run.run_id, DETAIL_PANEL_KEY, tiles=False, on=fed)
    defs = provider.definitions(run.path)
    results(run, records, fed, defs)
    defined_grids.metric_grids(run, records, f"detail_all{_rk(run.run_id)}", defs, run_list.is_active(status))
    wandb_run_panel.summary_section(run.path)
    run_files_panel.section(run.path, f"detail_files{_rk(run.run_id)}")
    run_sections.process_output(run.path, run_list.is_active(status))
    run_sections.console_output(run.path, run_list.is_active(status), status.get("state") == "failed")
    if was_active and not run_list.is_active(status):
        st.rerun()  # full rerun: final results, and no more refresh timer


def damaged(run: provider.RunInfo) -> None:
    """What is wrong with a damaged run, and what its folder holds (it can be deleted on Runs & compare)."""
    message = safe_text.md(f"This run's files are damaged: {run.status.get('message')}")
    st.error(message, icon=":material/broken_image:")
    try:
        names = sorted(p.name + ("/" if p.is_dir() else "") for p in run.path.iterdir())
    except OSError as exc:
        names = [f"(cannot list the folder: {exc.strerror})"]
    listing = safe_text.md(", ".join(names) or "nothing")
    st.caption(f"{safe_text.code(run.path)} holds: {listing}. Delete it on Runs & compare, or fix the file.")


def page() -> None:
    """Pick a run, then show its summary, results, config and tracking links (refreshing while it trains)."""
    inplace_chart.warm_up()  # first: plotly.js loads while the server runs the rest of the page
    line_chart.warm_up()  # and the line charts' uPlot and chart files
    st.title("Run detail")
    run = panels.pick_run(run_list.all_runs())
    if run is None:
        st.info("No runs yet.")
        return
    if run.damaged:
        damaged(run)
        return
    run_sections.notes_header(run)
    meta = wandb_run_panel.header(run.path)  # W&B group, job type (a W&B group is no population)
    if meta.group:
        wandb_run_panel.group_compare(run.run_id, meta.group, run_list.all_runs())
    group = groups.group_of(run)
    if group:
        st.caption(
            f"Member {safe_text.md(run.status.get('member'))} of population {safe_text.code(group)}; "
            "the Live page shows all its members."
        )
    active = run_list.is_active(run.status)
    refresh, polled_ids = refresh_trigger.follow([run] if active else [], DETAIL_REFRESH_S)
    with st.container(key=DETAIL_PANEL_KEY):
        st.fragment(panels.guarded(summary), run_every=refresh)(run, active, polled_ids)
    tracking(run)
    # Drawn only when opened (on_change="rerun"): a closed expander's table and code would make every
    # fresh tab load the table and syntax-highlighter scripts (~2.7 MB) before the charts draw.
    with st.expander("Configuration and command", key="detail_config", on_change="rerun") as box:
        if box.open:
            flat = run.flat_config  # the run's hparams: nested settings as dotted keys, a logdir's add_hparams too
            st.dataframe(
                pd.DataFrame({"setting": list(flat), "value": [str(v) for v in flat.values()]}), hide_index=True
            )
            command = run_list.run_command(run.path)
            if command:
                st.code(shlex.join(command), language="bash", wrap_lines=True)


page()
