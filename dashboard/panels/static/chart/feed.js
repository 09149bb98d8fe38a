// A chart's feed: the rows a run wrote after the chart's cursor, handed to the chart as they come.
//
// The transport lives here alone: `subscribe` is what a chart calls, whatever carries the rows. Now it
// pulls from the rows route (dashboard/server/rows_route.py) when the page's refresh trigger says the run's
// records grew (the "jaxdash-streams" window event, dashboard/panels/refresh_trigger.py), so a run that
// writes nothing costs no request. A hidden tab fetches nothing; a chart more than 200 px out of view asks
// for nothing and catches up at once when back in view. It hands rows over at most once per `gapMs`, and
// never sooner than GAP_FACTOR x the last draw's time after it (a slow machine draws less often); rows that
// come sooner wait and make one draw. Exposes window.__jaxdashLine.feed.
(function () {
  const ns = (window.__jaxdashLine = window.__jaxdashLine || {});
  const GAP_FACTOR = 10;

  // Follow `source` ({url, offset, gapMs}) for the chart element `el`: onRows(rows) gets each answer
  // {offset, x: {tag: steps}, y: {tag: values}, wall: {tag: seconds}} and returns whether it drew.
  // Returns the function that stops it (a new spec, or the chart gone).
  function subscribe(el, source, onRows) {
    const st = {offset: source.offset, fetching: false, again: false, next: 0, later: null, inSight: null,
      missed: false, stopped: false};
    const pull = async () => {
      if (st.stopped) return;
      if (!el.isConnected) return stop();
      if (document.hidden) return;
      if (st.inSight === false) { st.missed = true; return; }
      if (st.fetching) { st.again = true; return; }
      const wait = st.next - performance.now();
      if (wait > 5) {  // drawn moments ago: what comes meanwhile makes one draw (a timer may fire a little early)
        if (!st.later) st.later = setTimeout(() => { st.later = null; pull(); }, wait);
        return;
      }
      st.fetching = true; st.again = false;
      try {
        const r = await fetch(source.url + "&after=" + st.offset, {cache: "no-store"});
        const got = r.ok ? await r.json() : null;
        if (!got || got.behind || st.stopped) return;  // far behind: the page's next spec brings them
        st.offset = got.offset;
        const t0 = performance.now();
        if (!onRows(got)) return;
        st.next = performance.now() + Math.max(source.gapMs, GAP_FACTOR * (performance.now() - t0));
      } catch (e) { /* the server is away: the next change tries again */ }
      finally {
        st.fetching = false;
        if (st.again && !st.stopped) pull();
      }
    };
    const sight = new IntersectionObserver((entries) => {
      st.inSight = entries[entries.length - 1].isIntersecting;
      if (st.inSight && st.missed) { st.missed = false; pull(); }
    }, {rootMargin: "200px 0px"});
    sight.observe(el);
    window.addEventListener("jaxdash-streams", pull);
    function stop() {
      st.stopped = true;
      window.removeEventListener("jaxdash-streams", pull);
      sight.disconnect();
      if (st.later) clearTimeout(st.later);
    }
    pull();  // what was written since the spec was built
    return stop;
  }

  ns.feed = {subscribe};
})();
