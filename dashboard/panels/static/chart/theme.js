// Chart theme: light or dark from the page's own background (Streamlit's theme), and series colours.
// Loaded once per page (dashboard/panels/line_chart.py); exposes window.__jaxdashLine.theme.
(function () {
  const ns = (window.__jaxdashLine = window.__jaxdashLine || {});
  // A qualitative palette of 10 distinct colours (Tableau 10): runs and population members.
  const QUALITATIVE = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
    "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"];
  // Past 10 series: evenly spaced stops of a perceptual (viridis-like) ramp, interpolated in RGB.
  const RAMP = [[68, 1, 84], [59, 82, 139], [33, 145, 140], [94, 201, 98], [253, 231, 37]];

  function rgbOf(css) {  // "rgb(14, 17, 23)" or "rgba(...)": [r, g, b, a]
    const m = String(css).match(/[\d.]+/g) || [];
    return [0, 1, 2, 3].map((i) => (m[i] === undefined ? (i === 3 ? 1 : 255) : Number(m[i])));
  }

  function pageBackground() {  // the first opaque background from the app's root up: Streamlit's theme
    for (const el of [document.querySelector(".stApp"), document.body, document.documentElement]) {
      if (!el) continue;
      const c = rgbOf(getComputedStyle(el).backgroundColor);
      if (c[3] > 0) return c;
    }
    return [255, 255, 255, 1];
  }

  function current() {  // {dark, text, grid, axis, background}
    const [r, g, b] = pageBackground();
    const dark = 0.2126 * r + 0.7152 * g + 0.0722 * b < 128;
    return dark
      ? {dark, text: "#e6e6e6", axis: "#9aa0a6", grid: "rgba(255,255,255,0.10)", background: `rgb(${r},${g},${b})`}
      : {dark, text: "#262730", axis: "#5f6368", grid: "rgba(0,0,0,0.08)", background: `rgb(${r},${g},${b})`};
  }

  function ramp(t) {
    const p = Math.min(Math.max(t, 0), 1) * (RAMP.length - 1), i = Math.min(Math.floor(p), RAMP.length - 2), f = p - i;
    const c = RAMP[i].map((v, k) => Math.round(v + f * (RAMP[i + 1][k] - v)));
    return `rgb(${c[0]},${c[1]},${c[2]})`;
  }

  function color(i, n) {  // series i of n: the qualitative palette up to 10, the perceptual ramp past it
    return n <= QUALITATIVE.length ? QUALITATIVE[i % QUALITATIVE.length] : ramp(n > 1 ? i / (n - 1) : 0);
  }

  function faint(css, alpha) {  // a colour at `alpha` opacity (the raw line behind a smoothed one)
    if (css.startsWith("#")) {
      const h = css.length === 4 ? css.slice(1).split("").map((c) => c + c).join("") : css.slice(1, 7);
      const v = [0, 2, 4].map((k) => parseInt(h.slice(k, k + 2), 16));
      return `rgba(${v[0]},${v[1]},${v[2]},${alpha})`;
    }
    const c = rgbOf(css);
    return `rgba(${c[0]},${c[1]},${c[2]},${alpha})`;
  }

  // Streamlit switches theme without a reload: charts follow when the app's background changes.
  const listeners = new Set();
  let last = null;
  function watch(fn) {
    listeners.add(fn);
    if (!ns.__themeTimer) {
      last = JSON.stringify(current());
      ns.__themeTimer = setInterval(() => {
        if (document.hidden) return;
        const now = JSON.stringify(current());
        if (now !== last) { last = now; for (const f of listeners) f(); }
      }, 1000);
    }
    return () => listeners.delete(fn);
  }

  // A colour scale (plotly's [[at, colour], ...]) for values low to high, readable on the page: viridis' bright part on
  // a dark page, its dark part on a light one, so the values `emphasis` marks most ("high", or "low": a minimised
  // objective's best) contrast most with the background.
  function readableScale(dark, emphasis) {
    return [0, 0.25, 0.5, 0.75, 1].map((at) => {
      const e = emphasis === "low" ? 1 - at : at;
      return [at, ramp(dark ? 0.2 + 0.8 * e : 0.85 * (1 - e))];
    });
  }

  ns.theme = {current, color, faint, watch, readableScale, QUALITATIVE};
})();
