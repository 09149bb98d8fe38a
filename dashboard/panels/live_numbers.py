"""A running run's numbers, kept current in the browser between its panel's reruns (Live, Run detail).

While one run trains, its curves append their own records (chart_feed) and the panel reruns
only for a new state or phase, or every few seconds (dashboard/views/live.py). In between, this
component asks the server for the progress line and the tiles' texts (in the page's poll: the
same texts the panel draws, from the same functions) and
writes them into the panel's own progress bar and metric tiles. It changes the text of their
existing text nodes only, so the panel's next rerun updates them as usual. A tile the panel does
not show yet (test/acc after the first evaluation) reruns the panel.

It asks in the page's poll (dashboard/server/poll_route.py, the hub in refresh_trigger.POLL_HUB_JS),
at most once a second (every 2 s while the run writes all the time: the page then polls every 2 s),
with the run's streams hash it last drew from: the answer carries the texts only when the run wrote
something since, so a run that writes nothing costs no request and no draw.
"""

from __future__ import annotations

import streamlit as st

from dashboard import refresh_timings
from dashboard.panels import panels, refresh_trigger
from dashboard.server import poll_route

EVERY_MS = refresh_timings.ms("numbers")

NUMBERS_JS = (
    refresh_trigger.POLL_HUB_JS
    + """
function setText(el, text) {  // the text node React made: replacing it would leave React a detached one
  const node = el && el.childNodes.length === 1 ? el.firstChild : null;
  if (node && node.nodeType === Node.TEXT_NODE && node.nodeValue !== text) node.nodeValue = text;
}
function show(panel, got, tiles) {  // false when a tile is new (the panel's rerun draws it)
  const bar = panel.querySelector('[data-testid="stProgress"]');
  if (bar) {
    setText(bar.querySelector('[data-testid="stMarkdownContainer"] p'), got.text);
    const fill = bar.querySelector('[data-testid="stProgressBarTrack"] > div');
    // No 0.5 s transition: moved every second, it kept the compositor drawing frames half the time
    // (Chromium's GPU process 1.3 s of CPU a minute on a machine that composites in software).
    if (fill) { fill.style.transition = "none"; fill.style.transform = `translateX(${(got.fraction - 1) * 100}%)`; }
  }
  const shown = new Set();
  for (const tile of panel.querySelectorAll('[data-testid="stMetric"]')) {
    const label = tile.querySelector('[data-testid="stMetricLabel"] p');
    const text = label && got.tiles[label.textContent];
    if (text !== undefined) setText(tile.querySelector('[data-testid="stMetricValue"] p'), text);
    if (label) shown.add(label.textContent);
  }
  return !tiles || Object.keys(got.tiles).every((t) => shown.has(t));
}
function newKey(f, got) { return f.keys !== null && f.keys !== undefined && got.keys > f.keys; }
function handle(f, got) {  // the poll's answer: {streams} alone when the run wrote nothing since f.streams
  f.streams = got.streams;
  if (got.text !== undefined && f.panel && (!show(f.panel, got, f.tiles) || newKey(f, got)) && !f.asked) {
    f.asked = true; f.trigger("changed", Date.now());
  }
}
export default function (component) {
  const { data, parentElement, setTriggerValue } = component;
  const hub = pollHub(data.hub_url);
  const f = hub.numbers[data.key] || (hub.numbers[data.key] = {next: 0});
  f.run = data.run_id; f.every = data.every_ms; f.panel = parentElement.closest("." + data.panel_class);
  f.tiles = data.tiles; f.keys = data.keys; f.trigger = setTriggerValue; f.asked = false;  // a rerun drew the panel: a new tile may ask again
  f.on = data.on;  // off once the run ended: the element stays (the charts below keep their place)
  f.handle = (got) => handle(f, got);
  return () => { delete hub.numbers[data.key]; };
}
"""
)

_numbers = st.components.v2.component("jaxdash_live_numbers", js=NUMBERS_JS, isolate_styles=False)


def follow(
    run_id: str, panel_key: str = panels.LIVE_PANEL_KEY, tiles: bool = True, on: bool = True, keys: int | None = None
) -> None:
    """Keep the progress bar and tiles of the panel this is placed in current (see module doc).

    panel_key: the key of the st.container that holds the panel (its CSS class is st-key-<key>).
    tiles: the panel shows the metric tiles (a new one reruns it); False: the progress line only.
    on: False once the run ended; placed all the same, so that what is below it does not move.
    keys: how many keys the panel charts (a run with more reruns it: a chart per key); None: not followed.
    """
    data = {
        "key": f"{panel_key}_numbers",
        "hub_url": poll_route.route(),
        "run_id": run_id,
        "every_ms": EVERY_MS,
        "panel_class": f"st-key-{panel_key}",
        "tiles": tiles,
        "keys": keys,
        "on": on,
    }
    _numbers(key=f"{panel_key}_numbers", data=data, on_changed_change=lambda: None)  # a new tile: rerun the panel
