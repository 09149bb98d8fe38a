"""The page's timing rules on a fake clock: the refresh trigger's polls and reruns, the chart feed's draws.

The rules live in the JavaScript the pages run (dashboard/panels/refresh_trigger.py TRIGGER_JS,
dashboard/panels/chart_feed.py FEED_JS). Here that same code runs in the session's Chromium on a blank
page whose clock is Playwright's fake one (`page.clock`): the server's answers and Plotly are stand-ins,
and minutes of page time pass in milliseconds. The browser tests (test_live_refresh.py,
test_live_feed.py) check end to end, on a real server and run, that the pages use these rules.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from dashboard.panels import line_chart, line_spec, refresh_trigger

pytestmark = pytest.mark.browser
# The rules, in the page's milliseconds (the modules' constants are what the pages send; these are what they must be).
POLL_MS = 250  # a run's changes show within a quarter of a second
STEADY_POLL_MS = 1_000  # a run writing all the time is asked every second (its charts draw then)
FEED_GAP_MS = 750  # a chart draws at most this often
GAP_MS = 500  # the Live panel reruns at most twice a second

# Stand-ins for the server: window.__sig is every run's change signature ("EVENTS.STREAMS"); each poll
# is noted in window.__polls, each rerun the trigger asks for in window.__reruns (page times, ms).
SERVER_JS = """() => {
  window.__sig = "e0.s0"; window.__polls = []; window.__reruns = []; window.__events = [];
  window.__rowsSent = 0; window.__draws = [];
  window.fetch = async (url) => {
    if (url.startsWith("/rows")) {  // the chart feed's rows, 20 ms later: a new row when the run wrote one
      await new Promise((ok) => setTimeout(ok, 20));
      const n = +window.__sig.split(".")[1].slice(1), got = {offset: n, x: {}, y: {}};
      if (n > window.__rowsSent) { window.__rowsSent = n; got.x.loss = [n]; got.y.loss = [1 / n]; }
      return {ok: true, json: async () => got};
    }
    window.__polls.push(performance.now());
    const q = JSON.parse(decodeURIComponent(url.split("?q=")[1])), s = {};
    for (const key in q.s) s[key] = window.__sig;
    return {ok: true, json: async () => ({s, n: {}})};
  };
  window.addEventListener("jaxdash-streams", (e) => window.__events.push([performance.now(), e.detail]));
}"""


def _mount_js(**over: Any) -> str:
    """JS that mounts the trigger as a page would, with rerun_on_change's data (`over` replaces fields)."""
    data = {
        "key": "trigger",
        "hub_url": "/poll",
        "ids": ["run"],
        "seen": "e0.s0",
        "poll_ms": refresh_trigger.POLL_MS,
        "steady_polls": refresh_trigger.STEADY_POLLS,
        "steady_poll_ms": refresh_trigger.STEADY_POLL_MS,
        "gap_ms": refresh_trigger.GAP_MS,
        "stream_gap_ms": refresh_trigger.GAP_MS,
        "on": True,
        **over,
    }
    return f"""() => window.__mount({{data: {json.dumps(data)},
      setTriggerValue: (name, value) => window.__reruns.push([performance.now(), value])}})"""


@pytest.fixture
def clock_page(chromium: Any) -> Any:
    """A blank page of the session's Chromium on a fake clock, with the trigger's and the feed's code loaded."""
    context = chromium.new_context()
    page = context.new_page()
    page.clock.install(time=0)
    page.clock.pause_at(1)  # 1 s; from here on page time moves only by run_for: none passes between two calls
    page.set_content("<html><body><div id='chart'></div></body></html>")
    page.add_script_tag(
        content=refresh_trigger.TRIGGER_JS.replace("export default function", "window.__mount = function")
    )
    page.add_script_tag(path=str(FEED_FILE))
    page.evaluate(SERVER_JS)
    yield page
    context.close()


def _gaps(times: list[float]) -> list[float]:
    return [round(b - a) for a, b in zip(times, times[1:], strict=False)]


def _writes(page: Any, every_ms: int, for_ms: int) -> None:
    """The run's records grow every `every_ms` for `for_ms` of page time (its streams part changes)."""
    page.evaluate(
        """(every) => { window.__writer = setInterval(() => {
          const [e, s] = window.__sig.split('.'); window.__sig = e + '.s' + (+s.slice(1) + 1); }, every); }""",
        every_ms,
    )
    page.evaluate("() => { const [e, s] = window.__sig.split('.'); window.__sig = e + '.s' + (+s.slice(1) + 1); }")
    page.clock.run_for(for_ms - 1)
    page.evaluate("clearInterval(window.__writer)")
    page.clock.run_for(1)


def test_a_run_that_writes_nothing_is_polled_every_250_ms_and_never_reruns_the_page(clock_page: Any) -> None:
    clock_page.evaluate(_mount_js())
    clock_page.clock.run_for(10_000)
    polls = clock_page.evaluate("window.__polls")
    assert len(polls) in (39, 40, 41) and set(_gaps(polls)) == {POLL_MS}, _gaps(polls)
    assert clock_page.evaluate("window.__reruns") == []
    # the first answer tells the charts to fetch what came since their figure was built; then nothing
    assert [t for t, _ in clock_page.evaluate("window.__events") if t > polls[0]] == []


def test_a_hidden_tab_asks_nothing_and_a_shown_one_catches_up(clock_page: Any) -> None:
    clock_page.evaluate(
        "() => Object.defineProperty(document, 'hidden', {get: () => window.__hidden, configurable: true})"
    )
    clock_page.evaluate("window.__hidden = true")
    clock_page.evaluate(_mount_js())
    clock_page.evaluate("window.__sig = 'e1.s0'")  # the run ended while nobody looked
    clock_page.clock.run_for(5_000)
    assert clock_page.evaluate("window.__polls") == [] and clock_page.evaluate("window.__reruns") == []
    clock_page.evaluate("window.__hidden = false")
    clock_page.clock.run_for(300)
    assert [v for _, v in clock_page.evaluate("window.__reruns")] == ["e1.s0:1"]


def test_news_reruns_the_page_at_the_next_poll_and_never_twice_within_the_gap(clock_page: Any) -> None:
    clock_page.evaluate(_mount_js())
    clock_page.clock.run_for(1_000)
    clock_page.evaluate("window.__sig = 'e1.s0'")  # a new state
    t_news = clock_page.evaluate("performance.now()")
    clock_page.clock.run_for(300)
    reruns = clock_page.evaluate("window.__reruns")
    assert len(reruns) == 1 and 0 < reruns[0][0] - t_news <= POLL_MS, (t_news, reruns)
    clock_page.evaluate(_mount_js(seen="e1.s0"))  # the rerun drew at once
    clock_page.evaluate("window.__sig = 'e2.s0'")  # and another state came
    clock_page.clock.run_for(refresh_trigger.GAP_MS + refresh_trigger.POLL_MS)
    reruns = clock_page.evaluate("window.__reruns")
    assert len(reruns) == 2 and reruns[1][0] - reruns[0][0] >= GAP_MS, reruns


@pytest.mark.parametrize(("page", "stream_gap_ms"), [("Runs", 15_000), ("Run detail", 20_000)])
def test_records_rerun_a_page_once_its_stream_gap_passed_and_a_new_state_at_once(
    clock_page: Any, page: str, stream_gap_ms: int
) -> None:
    """Runs (views/runs.py RECORDS_REFRESH_S) and Run detail (views/detail.py DETAIL_FED_MS) rerun for a
    run's records at most every stream gap, counted from their last rerun; a new state reruns at once."""
    clock_page.clock.run_for(60_000)  # the page was loaded a while ago
    clock_page.evaluate(_mount_js(gap_ms=1000, stream_gap_ms=stream_gap_ms))
    _writes(clock_page, 250, 1_000)
    first = clock_page.evaluate("window.__reruns")
    assert len(first) == 1, first  # the first records after its last rerun: at once
    clock_page.evaluate(_mount_js(gap_ms=1000, stream_gap_ms=stream_gap_ms, seen=first[0][1].split(":")[0]))
    _writes(clock_page, 250, stream_gap_ms - 1_000)  # a run writing all the time
    assert len(clock_page.evaluate("window.__reruns")) == 1, f"{page} reran for records within its stream gap"
    _writes(clock_page, 250, 2_000)
    reruns = clock_page.evaluate("window.__reruns")
    assert len(reruns) == 2 and reruns[1][0] - first[0][0] >= stream_gap_ms, reruns
    clock_page.evaluate(_mount_js(gap_ms=1000, stream_gap_ms=stream_gap_ms, seen=reruns[1][1].split(":")[0]))
    clock_page.clock.run_for(1_000)
    clock_page.evaluate("() => { window.__sig = 'e9.' + window.__sig.split('.')[1]; }")  # it stopped
    t_state = clock_page.evaluate("performance.now()")
    clock_page.clock.run_for(2_000)
    reruns = clock_page.evaluate("window.__reruns")
    assert len(reruns) == 3 and reruns[2][0] - t_state <= STEADY_POLL_MS, reruns


def test_a_steady_writer_is_polled_every_1_s_and_at_250_ms_again_after_a_pause(clock_page: Any) -> None:
    clock_page.evaluate(_mount_js(stream_gap_ms=20_000))
    clock_page.clock.run_for(1_000)
    _writes(clock_page, 100, 10_000)  # a record every 0.1 s: news at every poll
    polls = clock_page.evaluate("window.__polls")
    assert _gaps(polls[-4:]) == [STEADY_POLL_MS] * 3, _gaps(polls)
    events = [t for t, _ in clock_page.evaluate("window.__events")]
    assert _gaps(events[-3:]) == [STEADY_POLL_MS] * 2, (events, polls)  # each poll with news tells the charts
    # A pause: the poll asked 1 s later has no news, so the one after it is asked 250 ms later again.
    clock_page.clock.run_for(3 * refresh_trigger.STEADY_POLL_MS)
    t_write = clock_page.evaluate("performance.now()")
    _writes(clock_page, 250, 1_000)
    after = [t for t in clock_page.evaluate("window.__polls") if t > t_write]
    assert set(_gaps(after)) == {POLL_MS}, _gaps(after)  # back at the full rate
    news = [t for t, _ in clock_page.evaluate("window.__events") if t > t_write]
    assert news and news[0] - t_write <= POLL_MS + 30, news  # the charts are told at the next poll


FEED_FILE = line_chart.CHART_STATIC / "feed.js"
# A chart's feed as the chart engine subscribes it (its gap from the spec line_spec builds); a draw is noted.
FOLLOW_JS = (
    """() => window.__jaxdashLine.feed.subscribe(document.getElementById("chart"),
  {url: "/rows?tag=loss", offset: 0, gapMs: GAP}, (got) => {
    if (!(got.x.loss || []).length) return false;
    window.__draws.push(performance.now()); return true;
  })"""
).replace("GAP", str(line_spec.feed("run", 0, {"loss": 0})["gap_ms"]))
NEWS_JS = """() => window.dispatchEvent(new CustomEvent("jaxdash-streams"))"""
WRITE_JS = "() => { window.__sig = 'e0.s' + (+window.__sig.split('.')[1].slice(1) + 1); }"


def test_a_chart_draws_rows_at_once_after_a_quiet_while_and_waits_its_gap_after_a_draw(clock_page: Any) -> None:
    clock_page.evaluate(FOLLOW_JS)
    clock_page.clock.run_for(5_000)
    clock_page.evaluate(WRITE_JS)
    clock_page.evaluate(NEWS_JS)
    clock_page.clock.run_for(30)
    assert len(clock_page.evaluate("window.__draws")) == 1  # at once (the rows' answer takes 20 ms)
    clock_page.clock.run_for(200)
    clock_page.evaluate(WRITE_JS)
    clock_page.evaluate(NEWS_JS)
    clock_page.clock.run_for(400)
    assert len(clock_page.evaluate("window.__draws")) == 1  # within the 0.75 s gap: waits
    clock_page.clock.run_for(200)
    draws = clock_page.evaluate("window.__draws")
    assert len(draws) == 2 and FEED_GAP_MS <= draws[1] - draws[0] <= FEED_GAP_MS + 40, draws


def test_a_steady_writers_chart_draws_at_every_poll_once_a_second(clock_page: Any) -> None:
    """The trigger and a chart's feed together: a run writing every 0.1 s is drawn at every poll, never more
    often than every 0.75 s (its first 2 s, polled every 250 ms) and never less often than once a second."""
    clock_page.evaluate(_mount_js(stream_gap_ms=20_000))
    clock_page.evaluate(FOLLOW_JS)
    clock_page.clock.run_for(2_000)
    _writes(clock_page, 100, 20_000)
    gaps = _gaps(clock_page.evaluate("window.__draws"))
    assert len(gaps) >= 17 and min(gaps) >= FEED_GAP_MS and max(gaps) <= STEADY_POLL_MS + 40, gaps
    assert {round(g, -2) for g in gaps[-10:]} == {STEADY_POLL_MS}, gaps  # steady: one draw per poll
