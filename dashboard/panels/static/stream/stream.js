// The tab's one push stream (dashboard/server/push_route.py): every trigger, chart feed and live numbers of
// the page follows its runs through it, and nothing else asks the server for news.
//
// Each follower registers here (watch: a trigger's runs, feed: a chart's rows after its cursor, numbers: a
// run's progress line and tiles). A change of what the page follows (a new chart or spec, a trigger's runs)
// opens a new stream a moment later with every feed's cursor where its rows ended; a hidden tab closes the
// stream and opens it again, with its cursors, when shown; a broken one is opened again after reopenMs.
// Exposes window.__jaxdashStream: {configure, watch, feed, numbers, fire, opened (streams opened so far)}.
(function () {
  if (window.__jaxdashStream) return;
  const subs = {s: new Map(), f: new Map(), n: new Map()};
  const st = {url: null, reopenMs: 1000, es: null, shape: "", timer: null, nextFeed: 0};
  const ns = (window.__jaxdashStream = {opened: 0, received: 0});

  function query() {
    const q = {s: {}, g: {}, f: {}, n: {}};
    for (const [key, w] of subs.s) { q.s[key] = w.ids; q.g[key] = w.gapMs; }
    for (const [id, f] of subs.f) q.f[id] = [f.run, f.offset, f.tags];
    for (const [key, n] of subs.n) q.n[key] = n.run;
    return q;
  }
  function shapeOf(q) {  // what the stream follows; the feeds' cursors move with the stream itself
    return JSON.stringify([q.s, q.g, Object.keys(q.f), q.n]);
  }
  function close() {
    if (st.es) { st.es.close(); st.es = null; }
    st.shape = "";
  }
  function open() {
    clearTimeout(st.timer); st.timer = null;
    if (document.hidden || !st.url) return close();  // a hidden tab receives nothing
    const q = query(), shape = shapeOf(q);
    if (st.es && shape === st.shape) return;
    close();
    if (!subs.s.size && !subs.f.size && !subs.n.size) return;
    const es = (st.es = new EventSource(st.url + "?q=" + encodeURIComponent(JSON.stringify(q))));
    st.shape = shape; ns.opened++;
    const on = (name, fn) => es.addEventListener(name, (e) => { ns.received++; fn(JSON.parse(e.data)); });
    on("sig", (got) => { for (const key in got) { const w = subs.s.get(key); if (w) w.onSig(got[key]); } });
    on("numbers", (got) => { for (const key in got) { const n = subs.n.get(key); if (n) n.onNumbers(got[key]); } });
    on("rows", (got) => {  // {feed id: rows} of every feed that has new rows
      for (const id in got) {
        const f = subs.f.get(id), rows = got[id];
        if (!f) continue;
        if (!rows.behind) f.offset = rows.offset;
        f.onRows(rows);
      }
    });
    es.onerror = () => {  // the server went or restarted: a new stream with the cursors as they are now
      if (st.es !== es) return;
      close();
      st.timer = setTimeout(open, st.reopenMs);
    };
  }
  function changed() {  // many followers mount in one rerun: one new stream for all of them
    if (!st.timer) st.timer = setTimeout(open, 30);  // a cleanup and its remount in one rerun: no new stream
  }
  document.addEventListener("visibilitychange", () => (document.hidden ? close() : open()));

  // Streamlit's page sends every trigger value set before its next flush (one setTimeout) in one rerun request,
  // for the fragment of the first of them: a second fragment's trigger set in the same moment (two panels told of
  // one change by one push) reruns the first fragment and is lost. Every rerun this page's components ask for
  // goes through `fire`: one at a time, FIRE_SPACING_MS apart, each in a flush of its own.
  const FIRE_SPACING_MS = 40;
  const fires = {queue: [], timer: null, last: -Infinity};
  function drain() {
    fires.timer = null;
    const wait = fires.last + FIRE_SPACING_MS - performance.now();
    if (wait > 0) { fires.timer = setTimeout(drain, wait); return; }
    const next = fires.queue.shift();
    if (!next) return;
    fires.last = performance.now();
    next();
    if (fires.queue.length) fires.timer = setTimeout(drain, FIRE_SPACING_MS);
  }

  ns.configure = (url, reopenMs) => { st.url = url; st.reopenMs = reopenMs || st.reopenMs; };
  // Ask for a rerun: `ask` (a component's setTriggerValue call) runs now, or FIRE_SPACING_MS after the last.
  ns.fire = (ask) => { fires.queue.push(ask); if (!fires.timer) drain(); };
  // A trigger: onSig(signature) for its runs' change signature, at once and at each change; gapMs: the least
  // time it waits between two reruns for records alone (the server sends those changes only a few times per gap).
  ns.watch = (key, ids, onSig, gapMs) => {
    const old = subs.s.get(key);
    const w = {ids, onSig, gapMs: Math.max(0, Math.round(gapMs || 0))};
    const same = old && JSON.stringify([old.ids, old.gapMs]) === JSON.stringify([ids, w.gapMs]);
    subs.s.set(key, w);
    if (!same) changed();
    return () => { if (subs.s.get(key) === w) { subs.s.delete(key); changed(); } };
  };
  // A chart's feed: onRows(rows) for each part of run `run`'s records after byte `offset` ({offset, x, y, wall}).
  ns.feed = (run, tags, offset, onRows) => {
    const id = "f" + st.nextFeed++, f = {run, tags, offset, onRows};
    subs.f.set(id, f);
    changed();
    return () => { if (subs.f.delete(id)) changed(); };
  };
  // A run's live numbers: onNumbers({text, fraction, tiles, keys}) after it wrote, at most once a second.
  ns.numbers = (key, run, onNumbers) => {
    const old = subs.n.get(key), n = {run, onNumbers};
    subs.n.set(key, n);
    if (!old || old.run !== run) changed();
    return () => { if (subs.n.get(key) === n) { subs.n.delete(key); changed(); } };
  };
})();
