"""Rerun the Live panel when its runs changed, not on a timer.

A timed fragment reruns every LIVE_REFRESH_S whether or not the run wrote anything: each rerun is
server and browser work (the page_cost benchmark measures it) that a run loading data, compiling or
taking slow steps gets nothing from. This component, placed in the panel, polls the server's change
signature of its runs (dashboard/server/changes_route.py: a few stat calls) every POLL_MS and
reruns the panel only when it differs from the one the panel was drawn from; never sooner than
GAP_MS after its last rerun (a run that writes all the time gets the timer's rate), and not at all
while the tab is hidden. A record written shows within POLL_MS plus one rerun. When the records,
progress or media of its runs changed it also tells the page ("jaxdash-streams", a window event):
the Live page's charts and numbers then fetch what is new themselves (chart_feed, live_numbers).

A run that writes all the time brings news at every poll; its charts then redraw every 4 s and its
numbers every second (chart_feed, live_numbers), so polling it 4 times a second bought nothing but
requests, and each request costs Chromium ~6 ms of CPU on the training machine (a Live page
made 288 of its 384 requests a minute here). After STEADY_POLLS polls in a row with stream news
and no new state or phase (a run past its start, training), the trigger polls every STEADY_POLL_MS
instead (its event then says `steady`), and at the first poll without news, or with an event,
again every POLL_MS: an occasional record is still drawn at once, a run's start is followed at the
full rate, and a new state of a steadily writing run (finished, stopped) shows within STEADY_POLL_MS.
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from dashboard.server import changes_route

POLL_MS = 250
STEADY_POLLS = 8  # polls in a row (2 s) with stream news and no event: the run writes all the time
STEADY_POLL_MS = 1000
GAP_MS = 500  # = state.LIVE_REFRESH_S: at most two reruns a second, as the timer gave

TRIGGER_JS = """
const LOST_MS = 3000;  // a rerun asked for and not drawn by then is asked for again
export default function (component) {
  const { data, setTriggerValue } = component;
  const polls = (window.__jaxdashPolls = window.__jaxdashPolls || {});
  const p = polls[data.key] || (polls[data.key] = {asked: 0});
  p.url = data.url; p.gap = data.gap_ms; p.streamGap = data.stream_gap_ms; p.trigger = setTriggerValue;
  p.drawn = data.seen; p.waiting = false;  // the panel drew from this signature: any other one is news
  if (!data.on) { clearTimeout(p.timer); p.timer = null; return; }  // nothing to follow; the element stays
  if (!p.timer) {
    const tick = async () => {
      p.timer = setTimeout(tick, p.streak >= data.steady_polls ? Math.max(data.poll_ms, data.steady_poll_ms) : data.poll_ms);
      const since = performance.now() - p.asked;
      // After asking, wait for the rerun's own draw (it brings the signature it read); ask again
      // only if none came (a rerun Streamlit dropped, e.g. asked during a full page run).
      if (document.hidden || p.busy || since < p.gap || (p.waiting && since < LOST_MS)) return;
      p.busy = true;
      try {
        const r = await fetch(p.url, {cache: "no-store"});
        const seen = r.ok ? await r.text() : null;
        const [events, streams] = (seen || ".").split("."), [lastEvents, lastStreams] = (p.latest || ".").split(".");
        const news = !!seen && streams !== lastStreams;
        // A steady writer (stream news, and no new state or phase, at every poll) is polled every steady_poll_ms.
        p.streak = news && events === lastEvents ? (p.streak || 0) + 1 : 0;
        if (news) {  // fed charts and numbers fetch what is new
          const steady = p.streak >= data.steady_polls;
          window.dispatchEvent(new CustomEvent("jaxdash-streams", {detail: {steady}}));
        }
        p.latest = seen || p.latest;
        // "EVENTS.STREAMS": a new state, phase or file reruns at once; only grown records and progress
        // wait for the stream gap (the page's charts may append the records themselves).
        const event = seen && seen.split(".")[0] !== p.drawn.split(".")[0];
        if (seen && seen !== p.drawn && (event || since >= p.streamGap)) {
          p.asked = performance.now(); p.waiting = true;
          p.trigger("changed", seen + ":" + (p.n = (p.n || 0) + 1));  // never the same value twice
        }
      } catch (e) { /* the server is away: the next poll tries again */ }
      finally { p.busy = false; }
    };
    p.timer = setTimeout(tick, data.poll_ms);
  }
  return () => { clearTimeout(p.timer); delete polls[data.key]; };
}
"""

_trigger = st.components.v2.component("jaxdash_refresh_trigger", js=TRIGGER_JS, isolate_styles=False)


def rerun_on_change(
    run_ids: list[str],
    key: str = "refresh_trigger",
    gap_ms: int = GAP_MS,
    listing: Any = None,
    stream_gap_ms: int | None = None,
    poll_ms: int = POLL_MS,
    on: bool = True,
) -> None:
    """Rerun the fragment this is called in when one of `run_ids` (or the list of runs) changes.

    Call it first in the fragment: the signature it sends is taken before the panel reads the runs,
    so a change while the panel is drawn reruns it once more. gap_ms: the least time between two
    reruns. stream_gap_ms: the least time between two reruns for records and progress alone (a
    changed state or phase reruns after gap_ms); gap_ms if not given. poll_ms: how often it asks.
    on: False places the element without polling (a panel whose run ended keeps its layout).
    listing: the list of runs as the page saw it (state.watch_runs), if not the current one.
    """
    data = {
        "key": key,
        "url": changes_route.path(run_ids),
        "seen": changes_route.signature(run_ids, listing),
        "poll_ms": poll_ms,
        "steady_polls": STEADY_POLLS,
        "steady_poll_ms": STEADY_POLL_MS,
        "gap_ms": gap_ms,
        "stream_gap_ms": max(gap_ms, stream_gap_ms or 0),
        "on": on,
    }
    _trigger(key=key, data=data, on_changed_change=lambda: None)


def follow(runs: list[Any], every_s: float) -> tuple[float | None, list[str] | None]:
    """How a fragment follows the active `runs`: (its timer, the run ids it polls with rerun_on_change).

    Polled, with no timer, where the change route answers for every one of them; a timer of
    `every_s` otherwise (AppTest, a TensorBoard logdir's mirrored runs); neither without runs.
    """
    if not runs:
        return None, None
    if changes_route.watchable(runs):
        return None, [r.run_id for r in runs]
    return every_s, None
