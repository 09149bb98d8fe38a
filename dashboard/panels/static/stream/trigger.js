// A panel's refresh trigger: reruns the Streamlit fragment it sits in when its runs' change signature, pushed
// over the tab's stream (stream.js), differs from the one the panel was drawn from.
//
// The signature is "EVENTS.STREAMS": a new run, state, phase or key (EVENTS) reruns the panel after `gap_ms`
// since its last rerun; records and progress alone (STREAMS) only after `stream_gap_ms` (a page whose charts
// and numbers are fed by the stream sets it long), both counted from the panel's last draw. A change that comes
// within its gap waits for the gap's end.
// Exposes window.__jaxdashTrigger: mount(component) -> cleanup, and triggers (each key's gaps, for tests).
(function () {
  if (window.__jaxdashTrigger) return;
  const triggers = {};

  function check(p) {
    clearTimeout(p.timer); p.timer = null;
    const seen = p.latest;
    if (!seen || seen === p.drawn || p.asked === seen) return;
    const event = seen.split(".")[0] !== p.drawn.split(".")[0];
    const wait = p.last + (event ? p.gap : p.streamGap) - performance.now();
    if (wait > 0) { p.timer = setTimeout(() => check(p), wait); return; }
    p.last = performance.now(); p.asked = seen;
    const ask = p.trigger, value = seen + ":" + (p.n = (p.n || 0) + 1);  // never the same value twice
    window.__jaxdashStream.fire(() => ask("changed", value));  // one panel's rerun per flush (stream.js)
  }

  function mount(component) {
    const {data, setTriggerValue} = component;
    window.__jaxdashStream.configure(data.stream_url, data.reopen_ms);
    const p = triggers[data.key] || (triggers[data.key] = {last: -Infinity, n: 0});
    p.gap = data.gap_ms; p.streamGap = data.stream_gap_ms; p.trigger = setTriggerValue;
    if (p.drawn !== data.seen) p.last = performance.now();  // the panel was drawn from it: its gaps count from now
    p.drawn = data.seen; p.asked = null;
    if (p.stop) p.stop();
    const onSig = (seen) => { p.latest = seen; check(p); };
    p.stop = data.on ? window.__jaxdashStream.watch(data.key, data.ids, onSig, p.streamGap) : null;
    if (!data.on) p.latest = null;  // not following: a signature pushed before (e.g. before the tab hid) reruns nothing
    if (p.latest) check(p);
    return () => { if (p.stop) p.stop(); p.stop = null; clearTimeout(p.timer); };
  }
  window.__jaxdashTrigger = {mount, triggers};
})();
