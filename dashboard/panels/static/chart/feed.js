// A chart's feed: the rows a run wrote after the chart's cursor, handed to the chart as they come.
//
// The transport lives here alone: `subscribe` is what a chart calls, whatever carries the rows. The rows come
// over the tab's one push stream (../stream/stream.js, dashboard/server/push_route.py): the server sends the
// bytes after the cursor not sent yet, as the run writes them, and no request is made for them. A hidden tab's
// stream is closed (it receives nothing, and catches up from its cursors when shown); a chart more than 200 px
// out of view keeps the rows it receives and draws them once back in view. It hands rows over at most once per
// `gapMs`, and never sooner than GAP_FACTOR x the last draw's time after it (a slow machine draws less often);
// rows that come sooner wait and make one draw. Exposes window.__jaxdashLine.feed.
(function () {
  const ns = (window.__jaxdashLine = window.__jaxdashLine || {});
  const GAP_FACTOR = 10;

  function merge(a, b) {  // two answers of consecutive bytes as one: b's rows after a's
    if (!a) return b;
    const out = {offset: b.offset, x: {}, y: {}, wall: {}};
    for (const part of ["x", "y", "wall"]) {
      for (const tag of new Set([...Object.keys(a[part] || {}), ...Object.keys(b[part] || {})])) {
        out[part][tag] = [...((a[part] || {})[tag] || []), ...((b[part] || {})[tag] || [])];
      }
    }
    return out;
  }

  // Follow `source` ({stream, run, tags, offset, gapMs}) for the chart element `el`: onRows(rows) gets each
  // part {offset, x: {tag: steps}, y: {tag: values}, wall: {tag: seconds}} and returns whether it drew.
  // Returns the function that stops it (a new spec, or the chart gone).
  function subscribe(el, source, onRows) {
    const st = {held: null, next: 0, later: null, inSight: null, stopped: false};
    const hand = () => {
      if (st.stopped) return;
      if (!el.isConnected) return stop();
      if (!st.held || st.inSight === false) return;  // out of view: kept until it is back
      const wait = st.next - performance.now();
      if (wait > 5) {  // drawn moments ago: what comes meanwhile makes one draw (a timer may fire a little early)
        if (!st.later) st.later = setTimeout(() => { st.later = null; hand(); }, wait);
        return;
      }
      const rows = st.held;
      st.held = null;
      const t0 = performance.now();
      if (onRows(rows)) st.next = performance.now() + Math.max(source.gapMs, GAP_FACTOR * (performance.now() - t0));
    };
    const sight = new IntersectionObserver((entries) => {
      st.inSight = entries[entries.length - 1].isIntersecting;
      if (st.inSight) hand();
    }, {rootMargin: "200px 0px"});
    sight.observe(el);
    window.__jaxdashStream.configure(source.stream, source.reopenMs);
    const unfollow = window.__jaxdashStream.feed(source.run, source.tags, source.offset, (got) => {
      if (got.behind) return;  // its file was replaced: the page's next spec starts over
      st.held = merge(st.held, got);
      hand();
    });
    function stop() {
      st.stopped = true;
      unfollow();
      sight.disconnect();
      if (st.later) clearTimeout(st.later);
    }
    return stop;
  }

  ns.feed = {subscribe, merge};
})();
