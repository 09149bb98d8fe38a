// A metric grid drawn with uPlot on canvas: components/compare_figures.metric_grid's figure (its
// layout.meta.grid names the panels), as a grid of small uPlot charts under one shared legend.
// Used by inplace_chart.py's module for those figures: plotly.js took 0.3-0.5 s to draw a
// comparison of 50 runs (100 SVG lines) in a fresh tab; uPlot draws it in a few milliseconds.
// Kept from plotly's grid: one colour and legend entry per run (click hides it everywhere, double
// click shows it alone), hover names the nearest point, drag zooms (double click resets), log axes,
// markers on sparse lines, population bands, and the zoom and hidden runs across redraws.
// A grid whose figure names `controls` (a comparison's, Run detail's) has the line chart's controls above it
// (static/chart/controls.js: smoothing, log y, the x axis among step, the times, epoch and the figure's `xkeys`,
// ignore outliers; saved in the browser under that name, so every grid of that name follows a change), drawn
// by grid_view.js; every grid follows the light or dark theme.
// A classic script, loaded once a page after uPlot, static/chart/'s theme, controls and series and grid_view.js
// (inplace_chart.py: `loadGrid`); it defines window.__jaxdashGrid.draw. For tests and probes a grid's div
// holds `__gridView` ({settings, dark, panels: [{title, log, range, lines: [{name, x, y, raw}]}]}).
(() => {
const GRID_PLOT_H = 230, GRID_TITLE_H = 30, GRID_HOVER_PX = 24;
const GRID_FONT = '12px "Source Sans", sans-serif';  // Streamlit's
const GRID_CSS = `
.jaxdash-grid-legend { display: flex; flex-wrap: wrap; gap: 2px 14px; max-height: 76px; overflow-y: auto;
  font: ${GRID_FONT}; margin: 0 0 6px 4px; }
.jaxdash-grid-legend span { cursor: pointer; white-space: nowrap; user-select: none; }
.jaxdash-grid-legend span.off { opacity: 0.35; }
.jaxdash-grid-legend i { display: inline-block; width: 18px; height: 3px; margin: 0 5px 3px 0; vertical-align: middle; }
.jaxdash-grid-cells { display: grid; gap: 4px 10px; }
.jaxdash-grid-cell { min-width: 0; position: relative; }
.jaxdash-grid-title { height: ${GRID_TITLE_H}px; text-align: center; font: 14px "Source Sans", sans-serif;
  overflow: hidden; white-space: nowrap; text-overflow: ellipsis; }
.jaxdash-grid-title small { display: block; font-size: 11px; color: #777; }
.jaxdash-grid-tip { position: absolute; pointer-events: none; z-index: 10;
  border: 1px solid #ccc; border-radius: 3px; padding: 2px 6px; font: ${GRID_FONT}; white-space: nowrap; display: none; }
.jaxdash-grid-empty { height: ${GRID_PLOT_H}px; display: flex; align-items: center; justify-content: center; color: #999; }`;
const GRID_DTYPES = {f8: Float64Array, f4: Float32Array, i1: Int8Array, u1: Uint8Array, i2: Int16Array,
  u2: Uint16Array, i4: Int32Array, u4: Uint32Array, i8: BigInt64Array, u8: BigUint64Array};

function gridValues(v, log) {  // plotly's list or typed array ({dtype, bdata}): numbers, gaps (and <= 0 on a log axis) null
  let a = v || [];
  if (!Array.isArray(a) && a.bdata !== undefined) {
    const text = atob(a.bdata), bytes = new Uint8Array(text.length);
    for (let i = 0; i < text.length; i++) bytes[i] = text.charCodeAt(i);
    a = new GRID_DTYPES[a.dtype](bytes.buffer);
  }
  const out = new Array(a.length);
  for (let i = 0; i < a.length; i++) {
    const n = a[i] === null ? NaN : Number(a[i]);
    out[i] = !Number.isFinite(n) || (log && n <= 0) ? null : n;
  }
  return out;
}

function gridPanels(fig, grid) {  // a panel per title, each with its lines (run, band) in trace order; wall: customdata
  const panels = grid.titles.map((title, i) => ({title, lacking: grid.lacking[i] || [], log: !!grid.log[i], lines: []}));
  for (const t of fig.data || []) {
    const panel = panels[t.xaxis && t.xaxis !== "x" ? parseInt(t.xaxis.slice(1), 10) - 1 : 0];
    if (!panel) continue;
    const line = t.line || {};
    panel.lines.push({
      name: t.name || "", group: t.legendgroup || t.name || "", legend: t.showlegend !== false,
      color: line.color || "#444", width: line.width ?? 1.6, alpha: t.opacity ?? 1,
      fill: t.fill === "toself" ? t.fillcolor : null, hover: t.hoverinfo !== "skip",
      markers: (t.mode || "").includes("markers"), x: gridValues(t.x), y: gridValues(t.y, panel.log),
      wall: t.customdata ? gridValues(t.customdata) : null,
    });
  }
  return panels;
}

function gridPolygon(u, si) {  // a band: its points as one closed, filled shape
  const [xs, ys] = u.data[si];
  const fill = new Path2D();
  let started = false;
  for (let i = 0; i < xs.length; i++) {
    if (ys[i] == null) continue;
    const x = u.valToPos(xs[i], "x", true), y = u.valToPos(ys[i], "y", true);
    if (started) fill.lineTo(x, y); else { fill.moveTo(x, y); started = true; }
  }
  fill.closePath();
  return {stroke: new Path2D(), fill, clip: null, band: null, gaps: null, flags: 0};
}

function gridTick(v) {  // a tick label: short for any magnitude (1e+15 steps, 1e-30 losses)
  if (v == null) return "";
  const a = Math.abs(v);
  return a >= 1e6 || (a > 0 && a < 1e-4) ? v.toExponential(a >= 1e6 ? 2 : 1).replace(/\.?0+e/, "e") : v.toLocaleString("en");
}

function gridDecades(u, axis, min, max) {  // a log axis' ticks: powers of ten, at most ~7 (uPlot's own failed past ~30 decades)
  const low = Math.floor(Math.log10(min)), high = Math.ceil(Math.log10(max)), step = Math.max(1, Math.ceil((high - low) / 6));
  const out = [];
  for (let e = low; e <= high; e += step) out.push(10 ** e);
  return out;
}

function gridDots(u, si) {  // a sparse line's points (uPlot's own draws none in mode 2)
  const [xs, ys] = u.data[si], r = 2.5 * uPlot.pxRatio, dots = new Path2D();
  for (let i = 0; i < xs.length; i++) {
    if (ys[i] == null) continue;
    const x = u.valToPos(xs[i], "x", true), y = u.valToPos(ys[i], "y", true);
    dots.moveTo(x + r, y);
    dots.arc(x, y, r, 0, 2 * Math.PI);
  }
  const inside = new Path2D();  // a zoom leaves the points outside the plot undrawn
  inside.rect(u.bbox.left, u.bbox.top, u.bbox.width, u.bbox.height);
  return {stroke: dots, fill: dots, clip: inside, band: null, gaps: null, flags: 0};
}

function gridAxis(label, vertical, log, look, time) {  // x: ticks and title (bottom row); y: as wide as its widest label
  const axis = {
    label: label || undefined, labelSize: label ? 16 : 0, labelGap: 0, labelFont: GRID_FONT, font: GRID_FONT,
    stroke: look.axis, grid: {stroke: look.grid, width: 1}, ticks: {stroke: look.grid, width: 1, size: 4},
    size: vertical ? (u, values) => (values ? 12 + 7 * Math.max(2, ...values.map((v) => v.length)) : 40) : 24,
  };
  if (!time) axis.values = (u, splits) => splits.map(gridTick);  // a time axis: uPlot's dates and times
  return log ? Object.assign(axis, {splits: gridDecades, filter: (u, splits) => splits}) : axis;
}

const GRID_LIGHT = {dark: false, axis: "#444", grid: "#ebebeb", text: "#262730", background: "rgb(255,255,255)"};

function gridLook() {  // the page's theme (static/chart/theme.js), light without it
  const theme = (window.__jaxdashLine || {}).theme;
  return theme ? theme.current() : GRID_LIGHT;
}

function gridOptions(panel, width, xTitle, hooks, s) {
  const look = gridLook(), time = s.x === "wall", sorted = s.x === "step" ? 1 : 0;
  const linear = uPlot.paths.linear();
  const series = [{}];
  for (const l of panel.lines) {
    series.push({
      label: l.name, stroke: l.fill ? "transparent" : l.color, fill: l.fill || undefined, width: l.fill ? 0 : l.width,
      alpha: l.alpha, paths: l.fill ? gridPolygon : linear,
      facets: [{scale: "x", auto: true, sorted: l.fill ? 0 : sorted}, {scale: "y", auto: true}],
      points: {show: l.markers, fill: l.color, stroke: l.color, paths: gridDots},
    });
  }
  return {
    mode: 2, width, height: GRID_PLOT_H, legend: {show: false}, series, hooks,
    scales: {x: {time, range: (u, min, max) => (min === max ? [min - 1, max + 1] : [min, max])},  // one step: room
      y: {...(panel.log ? {distr: 3, log: 10} : {}), ...(panel.range ? {range: () => panel.range} : {})}},
    axes: [gridAxis(xTitle, false, false, look, time), gridAxis(null, true, panel.log, look, false)],
    cursor: {drag: {x: true, y: true, uni: 30, setScale: true}, points: {show: false}},
  };
}

function gridNumber(v) {
  return Math.abs(v) >= 1e5 || (v !== 0 && Math.abs(v) < 1e-3) ? v.toExponential(4) : String(+v.toPrecision(6));
}

function gridHover(u, panel, tip, time) {  // the nearest point of a shown, hoverable line within GRID_HOVER_PX
  let pending = null;
  const find = (px, py) => {
    let best = null, bestD = GRID_HOVER_PX * GRID_HOVER_PX;
    panel.lines.forEach((l, k) => {
      if (!l.hover || !u.series[k + 1].show) return;
      for (let i = 0; i < l.x.length; i++) {
        if (l.y[i] == null) continue;
        const dx = u.valToPos(l.x[i], "x") - px, dy = u.valToPos(l.y[i], "y") - py, d = dx * dx + dy * dy;
        if (d < bestD) { bestD = d; best = [l, i]; }
      }
    });
    return best;
  };
  u.over.addEventListener("mousemove", (e) => {
    pending = [e.offsetX, e.offsetY];
    requestAnimationFrame(() => {
      if (!pending) return;
      const [px, py] = pending, hit = find(px, py);
      pending = null;
      if (!hit) { tip.style.display = "none"; return; }
      const [l, i] = hit;
      const at = time ? new Date(l.x[i] * 1000).toLocaleString() : gridNumber(l.x[i]);
      tip.textContent = `${l.name}: ${gridNumber(l.y[i])} at ${at}`;
      tip.style.borderColor = l.color;
      tip.style.display = "block";
      const left = u.over.offsetLeft + u.valToPos(l.x[i], "x"), top = u.over.offsetTop + u.valToPos(l.y[i], "y");
      tip.style.left = Math.max(0, Math.min(left + 10, u.over.offsetLeft + u.over.clientWidth - tip.offsetWidth)) + "px";
      tip.style.top = Math.max(0, top - 28) + "px";
    });
  });
  u.over.addEventListener("mouseleave", () => { pending = null; tip.style.display = "none"; });
}

function gridLegend(box, panels, charts, hidden) {  // one entry per run or population, in first-seen order
  const entries = new Map();
  for (const p of panels) for (const l of p.lines) if (l.legend && !entries.has(l.group)) entries.set(l.group, l);
  const apply = () => {
    for (const [u, p] of charts) u.batch(() => p.lines.forEach((l, k) => u.setSeries(k + 1, {show: !hidden.has(l.group)})));
    for (const span of box.children) span.classList.toggle("off", hidden.has(span.__group));
  };
  for (const [group, l] of entries) {
    const span = document.createElement("span"), swatch = document.createElement("i");
    swatch.style.background = l.color;
    span.append(swatch, document.createTextNode(l.name));
    span.__group = group;
    span.addEventListener("click", () => { hidden.has(group) ? hidden.delete(group) : hidden.add(group); apply(); });
    span.addEventListener("dblclick", () => {  // this one alone, or every one again
      const alone = [...entries.keys()].every((g) => (g === group) !== hidden.has(g));
      hidden.clear();
      if (!alone) for (const g of entries.keys()) if (g !== group) hidden.add(g);
      apply();
    });
    box.appendChild(span);
  }
  apply();
}

function gridZoomHooks(zoom, key) {  // a zoom the user dragged on a panel, kept for the panel's next figure
  return {
    ready: [(u) => {
      for (const [scale, range] of Object.entries(zoom[key] || {})) u.setScale(scale, range);
      u.over.addEventListener("dblclick", () => delete zoom[key]);  // uPlot shows every point again
    }],
    setSelect: [(u) => {  // the dragged box, before uPlot zooms to it; an axis it spans whole is not zoomed
      const {left, top, width, height} = u.select, w = u.over.clientWidth, h = u.over.clientHeight;
      if (width < 2 || height < 2) return;
      const range = {};
      if (width < w - 1) range.x = {min: u.posToVal(left, "x"), max: u.posToVal(left + width, "x")};
      if (height < h - 1) range.y = {min: u.posToVal(top + height, "y"), max: u.posToVal(top, "y")};
      zoom[key] = range;
    }],
  };
}

function gridEmpty(cell, text) {
  const empty = document.createElement("div");
  empty.className = "jaxdash-grid-empty"; empty.textContent = text;
  cell.appendChild(empty);
}

const gridNamed = new Map();  // controls' name -> the grid divs drawn under it (a change redraws them all)

function gridBar(div, grid) {  // the grid's controls (static/chart/controls.js), kept across redraws; null without
  const controls = (window.__jaxdashLine || {}).controls;
  if (!grid.controls || !controls || !window.__jaxdashGridView) return null;
  if (div.__gridBar && div.__gridBar.name === grid.controls) return div.__gridBar;
  const bar = controls.toolbar(grid.controls, {timeSeries: true, stepLabel: grid.x_title}, () => {
    for (const other of gridNamed.get(grid.controls) || []) {
      if (!other.isConnected) { gridNamed.get(grid.controls).delete(other); continue; }
      if (other !== div) other.__gridBar = null;  // its toolbar shows the saved settings anew
      drawGrid(other, other.__gridFig, other.__gridMeta);
    }
  });
  bar.el.classList.add("jaxdash-grid-controls");
  bar.setXKeys([...(Object.keys(grid.epoch || {}).length ? ["epoch"] : []), ...(grid.xkeys || [])]);
  bar.name = grid.controls;
  if (!gridNamed.has(grid.controls)) gridNamed.set(grid.controls, new Set());
  gridNamed.get(grid.controls).add(div);
  return (div.__gridBar = bar);
}

function gridFollowTheme(div) {  // redrawn when the page's theme changes (Streamlit switches it without a reload)
  const theme = (window.__jaxdashLine || {}).theme;
  if (!theme || div.__gridTheme) return;
  div.__gridTheme = theme.watch(() => {
    if (!div.isConnected) return void div.__gridTheme();
    if (div.__gridFig) drawGrid(div, div.__gridFig, div.__gridMeta);
  });
}

function drawGrid(div, fig, grid) {
  if (!document.getElementById("jaxdash-grid-css")) {
    const style = document.createElement("style");
    style.id = "jaxdash-grid-css"; style.textContent = GRID_CSS;
    document.head.appendChild(style);
  }
  if (div.__grid) div.__grid.destroy();
  if (div.__gridFig !== fig) div.__gridKeys = new Map();  // a new figure: a logged key's series read anew
  div.__gridFig = fig; div.__gridMeta = grid;
  gridFollowTheme(div);
  const hidden = (div.__gridHidden = div.__gridHidden || new Set()), zoom = (div.__gridZoom = div.__gridZoom || {});
  const bar = gridBar(div, grid), view = window.__jaxdashGridView;
  const s = bar ? bar.settings() : view ? view.NONE : {x: "step"}, look = gridLook();
  const keys = {held: div.__gridKeys, fetched: () => div.isConnected && div.__gridFig === fig && drawGrid(div, fig, grid)};
  const panels = view ? view.apply(gridPanels(fig, grid), grid, s, keys) : gridPanels(fig, grid);
  const cols = Math.max(1, Math.min(grid.cols, panels.length));
  const legend = document.createElement("div"), cells = document.createElement("div");
  legend.className = "jaxdash-grid-legend"; cells.className = "jaxdash-grid-cells";
  cells.style.gridTemplateColumns = `repeat(${cols}, minmax(0, 1fr))`;
  div.replaceChildren(...(bar ? [bar.el] : []), legend, cells);
  const charts = [], lastRow = Math.ceil(panels.length / cols) - 1;
  const width = () => Math.max(120, Math.floor((div.clientWidth - 10 * (cols - 1)) / cols));
  panels.forEach((panel, i) => {
    const cell = document.createElement("div"), title = document.createElement("div"), tip = document.createElement("div");
    cell.className = "jaxdash-grid-cell"; title.className = "jaxdash-grid-title"; tip.className = "jaxdash-grid-tip";
    Object.assign(tip.style, {background: look.background, color: look.text});
    title.textContent = panel.title;
    title.title = panel.title;
    if (panel.lacking.length) {
      const note = document.createElement("small");
      note.textContent = "not logged by " + panel.lacking.join(", ");
      title.appendChild(note);
    }
    cell.append(title);
    cells.appendChild(cell);
    if (!panel.lines.some((l) => l.x.length)) return void gridEmpty(cell, "no points");
    const key = panel.title + "\u0000" + s.x;  // a zoom is kept per x axis (its units)
    const xTitle = Math.floor(i / cols) === lastRow ? (view ? view.xTitle(grid, s) : grid.x_title) : null;
    let u;
    try {
      u = new uPlot(gridOptions(panel, width(), xTitle, gridZoomHooks(zoom, key), s),
        [null, ...panel.lines.map((l) => [l.x, l.y])], cell);
    } catch (e) {  // this panel only: the others still draw
      gridEmpty(cell, "could not draw these points: " + e.message);
      return;
    }
    u.root.__uplot = u;  // for tests and probes: what this panel draws
    cell.appendChild(tip);
    gridHover(u, panel, tip, s.x === "wall");
    charts.push([u, panel]);
  });
  gridLegend(legend, panels, charts, hidden);
  div.__drawn = panels.map((p) => p.lines.filter((l) => l.x.length).map((l) => [l.name, l.x.length]));
  div.__gridView = {settings: s, dark: look.dark, panels: panels.map((p) => ({title: p.title, log: p.log, range: p.range,
    lines: p.lines.map((l) => ({name: l.name, x: l.x, y: l.y, raw: !!l.raw, fill: !!l.fill, color: l.color}))}))};
  div.__grid = {
    resize: () => { for (const [u] of charts) u.setSize({width: width(), height: GRID_PLOT_H}); },
    destroy: () => { for (const [u] of charts) u.destroy(); div.__grid = null; div.__drawn = null; },
  };
}

window.__jaxdashGrid = {draw: drawGrid};
})();
