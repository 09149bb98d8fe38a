"""A live chart's feed: the browser appends a run's new records to the chart between the page's reruns.

Each rerun of the Live panel builds a figure from the records read so far (downsampled) and sends
it with the byte offset it was built from. Between reruns the chart asks the server for the rows
written after that offset (dashboard/server/rows_route.py) and appends them with
Plotly.extendTraces; a fitted line (`line_feed`) is moved instead to the newest record's (w, b)
with Plotly.restyle, so the line follows the run as closely as its loss curve. A chart asks only
when the page's refresh trigger saw the run's records grow (the "jaxdash-streams" event,
dashboard/panels/refresh_trigger.py: every 250 ms, every second for a run that writes all the
time), so a run that writes nothing costs no request. It draws at most once per FEED_GAP_MS
(refresh_timings "feed_gap"), and never sooner than FEED_GAP (10) x its last draw's time after it (a
slow machine draws less often); rows that come sooner wait and make one draw. So a steady writer's
chart is at most ~1 s behind it (benchmarks/live_staleness.py measures it); each draw is a full
Plotly redraw (~25 ms of Chromium's CPU per chart here) on the machine the run trains on.
A new figure restarts the feed from its own offset; a request from before it is dropped. A hidden
tab fetches and draws nothing. A chart scrolled out of sight (more than 200 px from the window)
asks for nothing and draws nothing; back in sight it fetches what it missed at once. A page of 50
panels a user scrolled through then costs, per write, the requests and redraws of the few charts
in view, not 50 (benchmarks/latency_keys.py).
"""

from __future__ import annotations

from typing import Any

from components.figures import SPARSE_POINTS
from dashboard import refresh_timings
from dashboard.server import rows_route

# JavaScript joined into the in-place chart's module (dashboard/panels/inplace_chart.py).
FEED_JS = """
const FEED_GAP = 10, FEED_GAP_MS = __FEED_GAP_MS__, SPARSE_POINTS = __SPARSE_POINTS__;
function follow(div, text) {
  div.__feedText = text;
  div.__feed = text ? JSON.parse(text) : null;
  div.__gen = (div.__gen || 0) + 1;  // a request from before this figure is dropped when it lands
  if (!div.__feed) return;
  div.__offset = div.__feed.offset;
  for (const i of Object.values(div.__feed.traces || {})) plainArrays(div, i);
  div.__ourRange = JSON.stringify((div.layout.yaxis || {}).range || null);
  if (!div.__pull) {
    div.__pull = () => pull(div);
    window.addEventListener("jaxdash-streams", div.__pull);
  }
  if (!div.__sight) {  // a chart scrolled out of sight asks for nothing; back in sight, it catches up at once
    div.__sight = new IntersectionObserver((entries) => {
      div.__inSight = entries[entries.length - 1].isIntersecting;
      if (div.__inSight && div.__missed) { div.__missed = false; pull(div); }
    }, {rootMargin: "200px 0px"});
    div.__sight.observe(div);
  }
  pull(div);  // what was written since the figure was built
}
async function pull(div) {  // the trigger saw the run's records grow
  const f = div.__feed;
  if (!f || !div.isConnected) {  // its run ended, or the chart is gone
    window.removeEventListener("jaxdash-streams", div.__pull);
    div.__pull = null;
    if (div.__sight) { div.__sight.disconnect(); div.__sight = null; }
    return;
  }
  if (document.hidden) return;
  if (div.__inSight === false) { div.__missed = true; return; }  // 50 panels: only those in sight fetch and draw
  if (div.__fetching) { div.__again = true; return; }
  const wait = (div.__feedNext || 0) - performance.now();
  if (wait > 5) {  // drawn moments ago: what comes meanwhile makes one draw (a timer may fire a little early)
    if (!div.__later) div.__later = setTimeout(() => { div.__later = null; pull(div); }, wait);
    return;
  }
  div.__fetching = true; div.__again = false;
  const gen = div.__gen;
  try {
    const r = await fetch(f.url + "&after=" + div.__offset, {cache: "no-store"});
    const got = r.ok ? await r.json() : null;
    if (!got || got.behind || gen !== div.__gen) return;  // the page's next figure brings them
    div.__offset = got.offset;
    const t0 = performance.now();
    if (!(await draw(div, f, got))) return;
    // At most one draw per FEED_GAP_MS, and at most 1/FEED_GAP of the time spent drawing (a slow machine)
    div.__feedNext = performance.now() + Math.max(FEED_GAP_MS, FEED_GAP * (performance.now() - t0));
  } catch (e) { /* the server is away: the next change tries again */ }
  finally {
    div.__fetching = false;
    if (div.__again) pull(div);
  }
}
async function draw(div, f, got) {  // the rows `got` onto the chart: true if anything was drawn
  const idx = [], xs = [], ys = [];
  for (const [tag, i] of Object.entries(f.traces || {})) {
    if ((got.x[tag] || []).length) { idx.push(i); xs.push(got.x[tag]); ys.push(got.y[tag]); }
  }
  const line = f.line && lineOf(f.line, got);
  if (line) {  // a fitted line y = w x + b: the newest record's (w, b) moves it (restyle draws the chart once)
    await Plotly.restyle(div, {x: [f.line.x], y: [line]}, [f.line.trace]);
    return true;
  }
  if (!idx.length) return false;
  widen(div, ys, f.clamp);  // the new y range drawn by the same draw as the rows
  idx.forEach((i, k) => {  // past SPARSE_POINTS a curve is a plain line, as a figure built anew draws it
    const t = div.data[i];
    if (t.mode === "lines+markers" && t.x.length + xs[k].length > SPARSE_POINTS) t.mode = "lines";
  });
  await Plotly.extendTraces(div, {x: xs, y: ys}, idx);
  return true;
}
function lineOf(line, got) {  // the line's y at line.x from the newest record holding both w and b, or null
  const w = got.y[line.w] || [], b = got.y[line.b] || [];
  if (!w.length || !b.length) return null;
  const ww = w[w.length - 1], bb = b[b.length - 1];
  return line.x.map((x) => ww * x + bb);
}
function plainArrays(div, i) {  // plotly.py sends NumPy arrays base64-encoded; extendTraces appends to arrays only
  const t = div.data[i];
  for (const k of ["x", "y"]) {
    const v = t && t[k];
    if (!v || Array.isArray(v)) continue;
    const full = ArrayBuffer.isView(v) ? v : v._inputArray || ((div._fullData || []).find((f) => f.index === i) || {})[k];
    t[k] = Array.from(full || []);
  }
}
function widen(div, ys, clamp) {  // a zoomed y axis (accuracy) grows to show appended points, unless the user zoomed
  // Set in the layout the next draw reads (extendTraces draws the whole plot anew): a relayout of its
  // own was a second full draw of the chart.
  const range = (div.layout.yaxis || {}).range;
  if (!Array.isArray(range) || JSON.stringify(range) !== div.__ourRange) return;
  const v = ys.flat(), lo = Math.min(...v), hi = Math.max(...v);
  if (lo >= range[0] && hi <= range[1]) return;
  const pad = 0.1 * (Math.max(range[1], hi) - Math.min(range[0], lo));
  let next = [Math.min(range[0], lo - pad), Math.max(range[1], hi + pad)];
  if (clamp) next = [Math.max(clamp[0], next[0]), Math.min(clamp[1], next[1])];
  div.__ourRange = JSON.stringify(next);
  div.layout.yaxis.range = next;
}
""".replace("__SPARSE_POINTS__", str(SPARSE_POINTS)).replace("__FEED_GAP_MS__", str(refresh_timings.ms("feed_gap")))


def rows_feed(run_id: str, offset: int, tag_list: tuple[str, ...], clamp: list[float] | None = None) -> Any:
    """The feed of a chart of `tag_list` built from run `run_id`'s records up to byte `offset`.

    Returns a function of the built figure (panels.live_chart calls it): {"url", "offset",
    "traces": {tag: trace index}, "clamp"} for inplace_chart, or None while no trace has a point.
    clamp: the y axis may widen within it (accuracy: [0, 1]).
    """

    def feed(fig: Any) -> dict[str, Any] | None:
        traces = {t.name: i for i, t in enumerate(fig.data) if t.name in tag_list and t.hoverinfo != "skip"}
        if not traces:
            return None  # no curve yet: the page's next figure has them
        return {"url": rows_route.path(run_id, list(traces)), "offset": offset, "traces": traces, "clamp": clamp}

    return feed


def line_feed(run_id: str, offset: int, trace: int, x: list[float], w_tag: str, b_tag: str) -> dict[str, Any]:
    """The feed of a fitted line y = w x + b (trace index `trace`, drawn at `x`) from run `run_id`'s records
    after byte `offset`: each new record's `w_tag` and `b_tag` move it (inplace_chart's `feed`)."""
    line = {"trace": trace, "x": list(x), "w": w_tag, "b": b_tag}
    return {"url": rows_route.path(run_id, [w_tag, b_tag]), "offset": offset, "traces": {}, "line": line, "clamp": None}
