// What a metric grid draws under its controls: each panel's lines on the chosen x axis (step, wall time,
// relative time, epoch or a logged scalar), smoothed (the raw line kept faint behind), on a log y axis, with a y range that
// ignores outliers, coloured by the theme's palette. The maths is the line chart's own (static/chart/:
// controls.js smooths and ranges, theme.js colours), so a comparison and a Live chart draw the same curve.
// A classic script loaded before line_grid.js (inplace_chart.py: `loadGrid`); defines window.__jaxdashGridView.
(() => {
const line = () => window.__jaxdashLine || {};
const NONE = {smooth: "none", weight: 0.6, window: 10, logY: false, x: "step", outliers: false};
const X_TITLES = {wall: "", relative: "seconds", epoch: "epoch"};  // a logged key's axis: the key

function xsOf(l, s, grid, keys) {  // the line's x values under settings `s` (null: no value there)
  if (s.x === "step") return l.x;
  if (s.x === "epoch") {
    const scale = (grid.epoch || {})[l.group];
    return scale ? l.x.map((v) => (v === null ? null : v / scale)) : l.x;  // a run without epochs: its step
  }
  if (s.x !== "wall" && s.x !== "relative") return keyXs(l, s.x, grid, keys);
  const wall = l.wall || l.x.map(() => null);
  if (s.x === "relative") return wall;
  const t0 = (grid.t0 || {})[l.group] || 0;
  return wall.map((v) => (v === null ? null : t0 + v));
}

// A logged scalar as the x axis (W&B's picker): the key's value at each of the line's steps (the value logged at
// that step or the last before it), read once a figure from the line's run (grid.series_urls, the server's
// series route); until it came, or for a line of several runs (a band), the line has no x and is not drawn.
function keyXs(l, key, grid, keys) {
  const url = (grid.series_urls || {})[l.group], none = l.x.map(() => null);
  const {series} = line();
  if (!url || !keys || !series) return none;
  const id = url + "\u0000" + key, got = keys.held.get(id);
  if (!got) {
    keys.held.set(id, "pending");
    fetch(url + "&tag=" + encodeURIComponent(key), {cache: "no-store"})
      .then((r) => (r.ok ? r.json() : null))
      .catch(() => null)
      .then((j) => { keys.held.set(id, {x: (j && j.x[key]) || [], y: (j && j.y[key]) || []}); keys.fetched(); });
    return none;
  }
  if (got === "pending") return none;
  const at = series.atSteps(got.x, got.y, l.x.map((v) => (v === null ? NaN : v)));
  return Array.from(at, (v) => (Number.isFinite(v) ? v : null));
}

function smoothed(l, s, smooth) {  // a band's polygon smooths its upper edge and its lower one (drawn backwards)
  if (!l.fill) return smooth(l.y, s);
  const half = l.y.length / 2;
  if (!Number.isInteger(half)) return l.y;
  const hi = smooth(l.y.slice(0, half), s), lo = smooth(l.y.slice(half).reverse(), s).reverse();
  return hi.concat(lo);
}

function kept(x, y, log) {  // points with an x (a run without times has none on a time axis); log: y <= 0 a gap
  const xs = [], ys = [];
  for (let i = 0; i < x.length; i++) {
    if (x[i] === null || !Number.isFinite(x[i])) continue;
    const v = y[i];
    xs.push(x[i]);
    ys.push(v === null || !Number.isFinite(v) || (log && v <= 0) ? null : v);
  }
  return [xs, ys];
}

function palette(panels, grid, theme) {  // legend entry -> colour: the theme's qualitative palette, perceptual past 10
  const groups = [];
  for (const p of panels) for (const l of p.lines) if (!groups.includes(l.group)) groups.push(l.group);
  const out = {};
  groups.forEach((g, i) => { out[g] = grid.palette && theme ? theme.color(i, groups.length) : null; });
  return out;
}

// The panels as drawn: `panels` (line_grid.js' gridPanels: x = step, y = logged values, wall = seconds since
// the run's start) under settings `s`. Each line gets its colour, x and y; smoothing adds the raw line, faint.
// keys: {held: Map, fetched()}: the logged keys' series this grid read (fetched() redraws it when one comes).
function apply(panels, grid, s, keys) {
  s = Object.assign({}, NONE, s || {});
  const {controls, theme} = line();
  const smooth = controls && s.smooth !== "none" ? controls.smooth : null;
  const colors = palette(panels, grid, theme);
  return panels.map((p) => {
    const log = p.log || s.logY, lines = [];
    for (const l of p.lines) {
      const x = xsOf(l, s, grid, keys), color = colors[l.group] || l.color;
      const fill = l.fill && colors[l.group] && theme ? theme.faint(colors[l.group], 0.18) : l.fill;
      if (smooth && !l.fill) {
        const [rx, ry] = kept(x, l.y, log);
        if (rx.length) lines.push({...l, color, x: rx, y: ry, width: 1, alpha: 0.25 * l.alpha, hover: false, legend: false, raw: true});
      }
      const [sx, sy] = kept(x, smooth ? smoothed(l, s, smooth) : l.y, log);
      if (sx.length) lines.push({...l, color, fill, x: sx, y: sy});
    }
    const shown = lines.filter((l) => !l.fill && !l.raw).map((l) => l.y);
    const range = s.outliers && controls ? controls.outlierRange(shown, log) : null;
    return {...p, log, range, lines};
  });
}

function xTitle(grid, s) {
  return s.x === "step" ? grid.x_title : s.x in X_TITLES ? X_TITLES[s.x] : s.x;
}

window.__jaxdashGridView = {apply, xTitle, NONE};
})();
