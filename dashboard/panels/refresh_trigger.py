"""Rerun the Live panel when its runs changed, not on a timer.

A timed fragment reruns every LIVE_REFRESH_S whether or not the run wrote anything: each rerun is
server and browser work (the page_cost benchmark measures it) that a run loading data, compiling or
taking slow steps gets nothing from. This component, placed in the panel, polls the server's change
signature of its runs (dashboard/server/changes_route.py: a few stat calls) every POLL_MS, in the
page's one poll request (POLL_HUB_JS, dashboard/server/poll_route.py), and
reruns the panel only when it differs from the one the panel was drawn from; never sooner than
GAP_MS after its last rerun (a run that writes all the time gets the timer's rate), and not at all
while the tab is hidden. A record written shows within POLL_MS plus one rerun. When the records,
progress or media of its runs changed it also tells the page ("jaxdash-streams", a window event):
the Live page's charts and numbers then fetch what is new themselves (chart_feed, live_numbers).

A run that writes all the time brings news at every poll; polling it 4 times a second bought nothing
but requests, and each request (with the numbers it brings) costs Chromium ~10 ms of CPU and the server
~4 ms on the training machine (a Live page made 288 of its 384 requests a minute here). After
STEADY_POLLS polls in a row with stream news and no new state or phase (a run past its start,
training), the trigger polls every STEADY_POLL_MS (1 s) instead, and at the first poll without news, or
with an event, again every POLL_MS: an occasional record or a run's start is followed at the full rate,
a steady writer's charts draw each second (chart_feed: at most one draw per 0.75 s), and a new state of
a steadily writing run (finished, stopped) shows within STEADY_POLL_MS.
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from dashboard import refresh_timings
from dashboard.server import changes_route, poll_route

POLL_MS = refresh_timings.ms("poll")
STEADY_POLLS = 8  # polls in a row (2 s) with stream news and no event: the run writes all the time
STEADY_POLL_MS = refresh_timings.ms("steady_poll")
GAP_MS = refresh_timings.ms("live_rerun")  # at most two reruns a second, as the timer gave

# One request per poll for every poller of the page (dashboard/server/poll_route.py): the run
# watcher, the panel's trigger and the run's numbers (live_numbers) each asked on their own before
# (a Live page: 180 of its 210 requests a minute). Each poller has its own interval; a poll asks for
# every poller due now or within HUB_SLACK of its interval, so pollers of one rate share requests
# (a slack over one half: two 1 s pollers half a second apart line up at the first poll).
# Joined into each component's module; the hub itself lives on window, one per page.
POLL_HUB_JS = """
const HUB_SLACK = 0.6;
function pollHub(url) {
  const hub = (window.__jaxdashHub = window.__jaxdashHub || {pollers: {}, numbers: {}, timer: null, busy: false});
  hub.url = url;
  return hub;
}
function hubSchedule(hub) {
  clearTimeout(hub.timer); hub.timer = null;
  if (hub.busy) return;  // the poll under way schedules the next when it ends
  const due = Object.values(hub.pollers).filter((p) => p.on).map((p) => p.due);
  if (!due.length) return;
  hub.timer = setTimeout(() => hubPoll(hub), Math.max(0, Math.min(...due) - performance.now()));
}
async function hubPoll(hub) {
  hub.timer = null;
  const now = performance.now(), q = {s: {}, n: {}}, asked = [];
  for (const [key, p] of Object.entries(hub.pollers)) {
    if (!p.on || p.due > now + HUB_SLACK * p.interval()) continue;
    p.due = now + p.interval();
    if (p.wants(now)) { q.s[key] = p.ids; asked.push(key); }
  }
  if (asked.length) {  // numbers ride along with a signature poll, at most once per their interval
    for (const [key, f] of Object.entries(hub.numbers)) {
      if (f.on && f.panel && !document.hidden && f.next <= now + 0.4 * f.every) {
        f.next = now + f.every; q.n[key] = [f.run, f.streams || ""];
      }
    }
  }
  if (!asked.length) { hubSchedule(hub); return; }
  hub.busy = true;
  try {
    const r = await fetch(hub.url + "?q=" + encodeURIComponent(JSON.stringify(q)), {cache: "no-store"});
    const got = r.ok ? await r.json() : null;
    for (const key of asked) if (hub.pollers[key]) hub.pollers[key].handle(got && got.s[key]);
    for (const key in q.n) if (hub.numbers[key] && got && got.n[key]) hub.numbers[key].handle(got.n[key]);
  } catch (e) { /* the server is away: the next poll tries again */ }
  finally { hub.busy = false; hubSchedule(hub); }
}
"""

TRIGGER_JS = (
    POLL_HUB_JS
    + """
const LOST_MS = __LOST_MS__;  // a rerun asked for and not drawn by then is asked for again
function wants(p, now) {  // ask for this poller's signature now?
  const since = now - p.asked;
  // After asking, wait for the rerun's own draw (it brings the signature it read); ask again
  // only if none came (a rerun Streamlit dropped, e.g. asked during a full page run).
  return !document.hidden && since >= p.gap && !(p.waiting && since < LOST_MS);
}
function handle(p, seen) {  // the signature the server answered (null: no answer)
  const [events, streams] = (seen || ".").split("."), [lastEvents, lastStreams] = (p.latest || ".").split(".");
  const news = !!seen && streams !== lastStreams;
  // A steady writer (stream news, and no new state or phase, at every poll) is polled every steady_poll_ms.
  p.streak = news && events === lastEvents ? (p.streak || 0) + 1 : 0;
  if (news) window.dispatchEvent(new CustomEvent("jaxdash-streams"));  // fed charts fetch what is new
  p.latest = seen || p.latest;
  // "EVENTS.STREAMS": a new state, phase or file reruns at once; only grown records and progress
  // wait for the stream gap (the page's charts may append the records themselves).
  const since = performance.now() - p.asked;
  const event = seen && seen.split(".")[0] !== p.drawn.split(".")[0];
  if (seen && seen !== p.drawn && (event || since >= p.streamGap)) {
    p.asked = performance.now(); p.waiting = true;
    p.trigger("changed", seen + ":" + (p.n = (p.n || 0) + 1));  // never the same value twice
  }
}
export default function (component) {
  const { data, setTriggerValue } = component;
  const hub = pollHub(data.hub_url);
  const p = hub.pollers[data.key] || (hub.pollers[data.key] = {asked: 0, due: 0});
  p.ids = data.ids; p.gap = data.gap_ms; p.streamGap = data.stream_gap_ms; p.trigger = setTriggerValue;
  p.on = data.on;
  p.interval = () => (p.streak >= data.steady_polls ? Math.max(data.poll_ms, data.steady_poll_ms) : data.poll_ms);
  p.wants = (now) => wants(p, now); p.handle = (seen) => handle(p, seen);
  p.drawn = data.seen; p.waiting = false;  // the panel drew from this signature: any other one is news
  if (p.on && !p.due) p.due = performance.now() + data.poll_ms;
  hubSchedule(hub);  // nothing to follow (on false): the element stays, its poller rests
  return () => { delete hub.pollers[data.key]; hubSchedule(hub); };
}
"""
).replace("__LOST_MS__", str(refresh_timings.ms("lost_rerun")))

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
    listing: the list of runs as the page saw it (runs_watch.watch_runs), if not the current one.
    """
    data = {
        "key": key,
        "hub_url": poll_route.route(),
        "ids": run_ids[: changes_route.MAX_IDS],
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
