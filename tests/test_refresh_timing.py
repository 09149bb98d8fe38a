"""The page's timing rules on a fake clock: the refresh trigger's reruns, the chart feed's draws, the stream.

The rules live in the JavaScript the pages run (dashboard/panels/static/stream/: stream.js, trigger.js;
static/chart/feed.js). Here that same code runs in the session's Chromium on a blank page whose clock is
Playwright's fake one (`page.clock`): the server's push stream is a stand-in EventSource, and minutes of page
time pass in milliseconds. The browser tests (test_live_refresh.py, test_live_feed.py, test_push_channel.py)
check end to end, on a real server and run, that the pages use these rules.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from dashboard.panels import line_chart, line_spec, refresh_trigger, stream_assets

pytestmark = pytest.mark.browser
# The rules, in the page's milliseconds (the modules' constants are what the pages send; these are what they must be).
FEED_GAP_MS = 750  # a chart draws at most this often
GAP_MS = 500  # the Live panel reruns at most twice a second

# A stand-in for the server's stream: window.__sig is the runs' change signature ("EVENTS.STREAMS"), sent
# at a stream's opening and at each change (as push_watch does); window.__rows(n) sends a feed row of step n.
# Each stream opened is noted in window.__opens, each rerun the trigger asks for in window.__reruns.
SERVER_JS = """() => {
  window.__sig = "e0.s0"; window.__opens = []; window.__reruns = []; window.__draws = []; window.__sources = [];
  class FakeSource {
    constructor(url) {
      this.url = url; this.on = {}; this.closed = false; this.q = JSON.parse(decodeURIComponent(url.split("?q=")[1]));
      window.__sources.push(this); window.__opens.push(performance.now());
      setTimeout(() => this.send("sig", window.__sig), 5);
    }
    addEventListener(name, fn) { (this.on[name] = this.on[name] || []).push(fn); }
    close() { this.closed = true; }
    send(name, what) {
      if (this.closed) return;
      let data = what;
      if (name === "sig") { data = {}; for (const key in this.q.s) data[key] = what; }
      for (const fn of this.on[name] || []) fn({data: JSON.stringify(data)});
    }
  }
  window.EventSource = FakeSource;
  const live = () => window.__sources.filter((s) => !s.closed);
  window.__setSig = (sig) => { window.__sig = sig; for (const s of live()) s.send("sig", sig); };
  window.__rows = (n) => {
    for (const s of live()) {
      const rows = {};
      for (const id in s.q.f) rows[id] = {offset: n, x: {loss: [n]}, y: {loss: [1 / n]}};
      s.send("rows", rows);
    }
  };
}"""


def _mount_js(**over: Any) -> str:
    """JS that mounts the trigger as a page would, with rerun_on_change's data (`over` replaces fields)."""
    data = {
        "key": "trigger",
        "stream_url": "/stream",
        "reopen_ms": 1000,
        "ids": ["run"],
        "seen": "e0.s0",
        "gap_ms": refresh_trigger.GAP_MS,
        "stream_gap_ms": refresh_trigger.GAP_MS,
        "on": True,
        **over,
    }
    return f"""() => window.__jaxdashTrigger.mount({{data: {json.dumps(data)},
      setTriggerValue: (name, value) => window.__reruns.push([performance.now(), value])}})"""


@pytest.fixture
def clock_page(chromium: Any) -> Any:
    """A blank page of the session's Chromium on a fake clock, with the stream's, trigger's and feed's code loaded."""
    context = chromium.new_context()
    page = context.new_page()
    page.clock.install(time=0)
    page.clock.pause_at(1)  # 1 s; from here on page time moves only by run_for: none passes between two calls
    page.set_content("<html><body><div id='chart'></div></body></html>")
    page.evaluate(SERVER_JS)
    for name in ("stream.js", "trigger.js"):
        page.add_script_tag(path=str(stream_assets.STREAM_STATIC / name))
    page.add_script_tag(path=str(FEED_FILE))
    yield page
    context.close()


def _gaps(times: list[float]) -> list[float]:
    return [round(b - a) for a, b in zip(times, times[1:], strict=False)]


def _writes(page: Any, every_ms: int, for_ms: int) -> None:
    """The run's records grow every `every_ms` for `for_ms` of page time (its streams part changes)."""
    bump = "() => { const [e, s] = window.__sig.split('.'); window.__setSig(e + '.s' + (+s.slice(1) + 1)); }"
    page.evaluate(f"(every) => {{ window.__writer = setInterval({bump}, every); }}", every_ms)
    page.evaluate(bump)
    page.clock.run_for(for_ms - 1)
    page.evaluate("clearInterval(window.__writer)")
    page.clock.run_for(1)


def test_a_run_that_writes_nothing_opens_one_stream_and_never_reruns_the_page(clock_page: Any) -> None:
    clock_page.evaluate(_mount_js())
    clock_page.clock.run_for(10_000)
    assert len(clock_page.evaluate("window.__opens")) == 1  # one stream, no request after it
    assert clock_page.evaluate("window.__reruns") == []


def test_a_hidden_tab_has_no_stream_and_a_shown_one_catches_up(clock_page: Any) -> None:
    clock_page.evaluate(
        "() => Object.defineProperty(document, 'hidden', {get: () => window.__hidden, configurable: true})"
    )
    clock_page.evaluate("window.__hidden = true")
    clock_page.evaluate(_mount_js())
    clock_page.evaluate("window.__setSig('e1.s0')")  # the run ended while nobody looked
    clock_page.clock.run_for(5_000)
    assert clock_page.evaluate("window.__opens") == [] and clock_page.evaluate("window.__reruns") == []
    clock_page.evaluate("window.__hidden = false; document.dispatchEvent(new Event('visibilitychange'))")
    clock_page.clock.run_for(50)
    assert [v for _, v in clock_page.evaluate("window.__reruns")] == ["e1.s0:1"]
    clock_page.evaluate("window.__hidden = true; document.dispatchEvent(new Event('visibilitychange'))")
    assert clock_page.evaluate("window.__sources.every((s) => s.closed)")  # hidden again: the stream closed


def test_news_reruns_the_page_at_once_and_never_twice_within_the_gap(clock_page: Any) -> None:
    clock_page.evaluate(_mount_js())
    clock_page.clock.run_for(1_000)
    t_news = clock_page.evaluate("performance.now()")
    clock_page.evaluate("window.__setSig('e1.s0')")  # a new state, pushed
    clock_page.clock.run_for(10)
    reruns = clock_page.evaluate("window.__reruns")
    assert len(reruns) == 1 and reruns[0][0] - t_news <= 10, (t_news, reruns)
    clock_page.evaluate(_mount_js(seen="e1.s0"))  # the rerun drew at once
    clock_page.evaluate("window.__setSig('e2.s0')")  # and another state came
    clock_page.clock.run_for(refresh_trigger.GAP_MS + 50)
    reruns = clock_page.evaluate("window.__reruns")
    assert len(reruns) == 2 and reruns[1][0] - reruns[0][0] >= GAP_MS, reruns


@pytest.mark.parametrize(("page", "stream_gap_ms"), [("Runs", 15_000), ("Run detail", 20_000)])
def test_records_rerun_a_page_once_its_stream_gap_passed_and_a_new_state_at_once(
    clock_page: Any, page: str, stream_gap_ms: int
) -> None:
    """Runs (views/runs.py RECORDS_REFRESH_S) and Run detail (views/detail.py DETAIL_FED_MS) rerun for a
    run's records at most every stream gap, counted from their last draw; a new state reruns at once."""
    clock_page.evaluate(_mount_js(gap_ms=1000, stream_gap_ms=stream_gap_ms))
    t_drawn = clock_page.evaluate("performance.now()")
    _writes(clock_page, 250, stream_gap_ms - 1_000)  # a run writing all the time
    assert clock_page.evaluate("window.__reruns") == [], f"{page} reran for records within its stream gap"
    _writes(clock_page, 250, 2_000)
    reruns = clock_page.evaluate("window.__reruns")
    assert len(reruns) == 1 and stream_gap_ms <= reruns[0][0] - t_drawn <= stream_gap_ms + 10, reruns
    clock_page.evaluate(_mount_js(gap_ms=1000, stream_gap_ms=stream_gap_ms, seen=reruns[0][1].split(":")[0]))
    clock_page.clock.run_for(1_000)
    clock_page.evaluate("() => window.__setSig('e9.' + window.__sig.split('.')[1])")  # it stopped
    t_state = clock_page.evaluate("performance.now()")
    clock_page.clock.run_for(2_000)
    reruns = clock_page.evaluate("window.__reruns")
    assert len(reruns) == 2 and reruns[1][0] - t_state <= 10, reruns


# Streamlit's page as it handles a component's setTriggerValue (its WidgetStateManager.scheduleFlush): a value set
# joins the pending batch, and one setTimeout later the batch goes as one rerun request for the fragment of its
# first value. Each request's trigger keys are noted in window.__requests.
FLUSH_JS = """() => {
  window.__requests = []; let batch = null;
  window.__setTrigger = (key) => (name, value) => {
    if (!batch) { batch = []; setTimeout(() => { window.__requests.push([performance.now(), batch]); batch = null; }, 0); }
    batch.push(key);
  };
}"""


def _mount_in_fragment_js(key: str) -> str:
    """JS that mounts trigger `key` in a fragment of its own (its setTriggerValue is Streamlit's, as FLUSH_JS)."""
    data = {"key": key, "stream_url": "/stream", "reopen_ms": 1000, "ids": [], "seen": "e0.s0"}
    data |= {"gap_ms": refresh_trigger.GAP_MS, "stream_gap_ms": refresh_trigger.GAP_MS, "on": True}
    return f"""() => window.__jaxdashTrigger.mount({{data: {json.dumps(data)},
      setTriggerValue: window.__setTrigger({json.dumps(key)})}})"""


def test_two_panels_told_of_one_change_at_once_each_get_a_rerun_request(clock_page: Any) -> None:
    """Live's run-list watch and its panel both follow the list of runs: one push reaches both in the same
    moment. Streamlit sends the trigger values of one flush as one request for the first one's fragment, so
    each panel's rerun must go in a request of its own, or the second panel (the page's switch to a new run)
    is never rerun."""
    clock_page.evaluate(FLUSH_JS)
    for key in ("runs_watch", "refresh_trigger"):
        clock_page.evaluate(_mount_in_fragment_js(key))
    clock_page.clock.run_for(1_000)
    t_news = clock_page.evaluate("performance.now()")
    clock_page.evaluate("window.__setSig('e1.s0')")  # a new run: both panels' signatures changed, one push
    clock_page.clock.run_for(200)
    requests = clock_page.evaluate("window.__requests")
    assert sorted(keys for _, keys in requests) == [["refresh_trigger"], ["runs_watch"]], requests
    assert requests[-1][0] - t_news <= 100, requests  # the second a moment after the first


FEED_FILE = line_chart.CHART_STATIC / "feed.js"
# A chart's feed as the chart engine subscribes it (its gap from the spec line_spec builds); a draw is noted.
FOLLOW_JS = (
    """() => window.__jaxdashLine.feed.subscribe(document.getElementById("chart"),
  {stream: "/stream", run: "run", tags: ["loss"], offset: 0, gapMs: GAP}, (got) => {
    if (!(got.x.loss || []).length) return false;
    window.__draws.push([performance.now(), got.x.loss]); return true;
  })"""
).replace("GAP", str(line_spec.feed("run", 0, {"loss": 0})["gap_ms"]))


def test_a_chart_draws_rows_at_once_after_a_quiet_while_and_waits_its_gap_after_a_draw(clock_page: Any) -> None:
    clock_page.evaluate(FOLLOW_JS)
    clock_page.clock.run_for(5_000)
    assert len(clock_page.evaluate("window.__opens")) == 1
    clock_page.evaluate("window.__rows(1)")
    assert len(clock_page.evaluate("window.__draws")) == 1  # at once
    clock_page.clock.run_for(200)
    clock_page.evaluate("window.__rows(2)")
    clock_page.clock.run_for(100)
    clock_page.evaluate("window.__rows(3)")
    clock_page.clock.run_for(300)
    assert len(clock_page.evaluate("window.__draws")) == 1  # within the 0.75 s gap: waits
    clock_page.clock.run_for(200)
    draws = clock_page.evaluate("window.__draws")
    assert len(draws) == 2 and FEED_GAP_MS <= draws[1][0] - draws[0][0] <= FEED_GAP_MS + 40, draws
    assert draws[1][1] == [2, 3]  # what came meanwhile: one draw, every row once


def test_a_steady_writers_chart_draws_every_gap_and_no_more_often(clock_page: Any) -> None:
    """A run writing every 0.1 s is drawn every 0.75 s (its gap), never more often, never less than once a second."""
    clock_page.evaluate(FOLLOW_JS)
    clock_page.clock.run_for(1_000)
    clock_page.evaluate(
        "(every) => { let n = 0; window.__writer = setInterval(() => window.__rows(++n), every); }", 100
    )
    clock_page.clock.run_for(20_000)
    clock_page.evaluate("clearInterval(window.__writer)")
    draws = clock_page.evaluate("window.__draws")
    gaps = _gaps([t for t, _ in draws])
    assert len(gaps) >= 20 and min(gaps) >= FEED_GAP_MS and max(gaps) <= 1_000, gaps
    steps = [x for _, xs in draws for x in xs]
    assert steps == list(range(1, len(steps) + 1))  # every row once, in order
