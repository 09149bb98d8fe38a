// A running run's numbers, kept current between its panel's reruns (Live, Run detail): the progress line and
// the tiles' texts the stream (stream.js) pushes after the run wrote, at most once a second, written into the
// panel's own progress bar and metric tiles. Only the text of their existing text nodes changes, so the panel's
// next rerun updates them as usual. A tile the panel does not show yet (test/acc after the first evaluation),
// or a new key, reruns the panel. Exposes window.__jaxdashNumbers.mount(component) -> cleanup.
(function () {
  if (window.__jaxdashNumbers) return;

  function setText(el, text) {  // the text node React made: replacing it would leave React a detached one
    const node = el && el.childNodes.length === 1 ? el.firstChild : null;
    if (node && node.nodeType === Node.TEXT_NODE && node.nodeValue !== text) node.nodeValue = text;
  }
  function show(panel, got, tiles) {  // false when a tile is new (the panel's rerun draws it)
    const bar = panel.querySelector('[data-testid="stProgress"]');
    if (bar) {
      setText(bar.querySelector('[data-testid="stMarkdownContainer"] p'), got.text);
      const fill = bar.querySelector('[data-testid="stProgressBarTrack"] > div');
      // No 0.5 s transition: moved every second, it kept the compositor drawing frames half the time.
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

  function mount(component) {
    const {data, parentElement, setTriggerValue} = component;
    window.__jaxdashStream.configure(data.stream_url, data.reopen_ms);
    const panel = parentElement.closest("." + data.panel_class);
    let asked = false;
    const handle = (got) => {
      const newKey = data.keys !== null && data.keys !== undefined && got.keys > data.keys;
      if (panel && (!show(panel, got, data.tiles) || newKey) && !asked) {
        asked = true;
        window.__jaxdashStream.fire(() => setTriggerValue("changed", Date.now()));  // one rerun per flush (stream.js)
      }
    };
    const stop = data.on ? window.__jaxdashStream.numbers(data.key, data.run_id, handle) : null;
    return () => { if (stop) stop(); };
  }
  window.__jaxdashNumbers = {mount};
})();
